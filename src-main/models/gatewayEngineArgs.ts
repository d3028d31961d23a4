/**
 * The engine arguments the gateway relies on (docs/guide/gateway.md, Routing), added to every engine
 * Tandem launches. vLLM's own options, as its parser reads them (test/fixtures/vllm/README.md):
 *
 * - `--enable-force-include-usage`: every stream carries usage (a last event with no choices, and
 *   the running counts on each event), so streams are metered without touching the client's body.
 * - `--served-model-name <served> <catalog key>`: the engine answers to the catalog key as well, so
 *   a request naming the key goes to it byte for byte. The first name stays the one it reports.
 */

const FORCE_USAGE = '--enable-force-include-usage'
const SERVED = /^--served[-_]model[-_]name(?:=(.*))?$/

/** `args` split into the served names they give (argparse's nargs='+' list) and everything else. */
function splitServed(args: readonly string[]): { rest: string[]; names: string[] } {
  const rest: string[] = []
  const names: string[] = []
  for (let i = 0; i < args.length; i++) {
    const m = SERVED.exec(args[i] as string)
    if (m === null) {
      rest.push(args[i] as string)
      continue
    }
    if (m[1] !== undefined) names.push(...m[1].split(/\s+/).filter((n) => n !== ''))
    // The list runs to the next flag (argparse's nargs='+').
    else while (i + 1 < args.length && !(args[i + 1] as string).startsWith('-')) names.push(args[++i] as string)
  }
  return { rest, names }
}

/** The gateway's own arguments for a command whose served names are `names` and other words `rest`. */
function gatewayTail(rest: readonly string[], names: readonly string[], served: string, key: string): string[] {
  const all = names.length === 0 ? [served] : [...names]
  if (!all.includes(key)) all.push(key)
  return ['--served-model-name', ...all, ...(rest.includes(FORCE_USAGE) ? [] : [FORCE_USAGE])]
}

/**
 * `args` (an entry's launch arguments, layout applied) with the gateway's own: the served names
 * gathered into one `--served-model-name` (vLLM takes one list; a second flag would replace the
 * first) with the catalog key last, and forced stream usage.
 */
export function gatewayEngineArgs(args: readonly string[], served: string, key: string): string[] {
  const { rest, names } = splitServed(args)
  return [...rest, ...gatewayTail(rest, names, served, key)]
}

/**
 * Only the gateway's arguments, to follow a command that keeps its own words (a recipe's, passed
 * after the runner's `--`): the list repeats the command's served names, since vLLM's last wins.
 */
export function gatewayTailArgs(args: readonly string[], served: string, key: string): string[] {
  const { rest, names } = splitServed(args)
  return gatewayTail(rest, names, served, key)
}
