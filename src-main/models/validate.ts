import type { Config } from '../config/load'
import type { RunMode, ValidationResult } from '../contract/models'
import type { Logger } from '../core/logger'
import { SshError, type SshPool, type SshTarget } from '../ssh/pool'
import { shq, shqArgs } from '../ssh/quote'
import { launchPlan } from './launch'
import type { CatalogEntry } from './types'

/** Importing vLLM (torch) inside the container takes seconds; a parser that has not answered by then never will. */
export const VALIDATE_TIMEOUT_MS = 90_000

/** The line the script prints its verdict on (vLLM's logger may print to stdout before it). */
const MARK = 'TANDEM_VALIDATE '

/**
 * Runs vLLM's own serve parser on the arguments (sys.argv[1:]) without building the engine. The
 * parser classes are looked up where current and recent releases keep them: FlexibleArgumentParser
 * in vllm.utils.argparse_utils (current) or vllm.utils (older); the serve parser from
 * ServeSubcommand.subparser_init (vllm.entrypoints.cli.serve), else make_arg_parser
 * (vllm.entrypoints.openai.cli_args) on its own. argparse reports by printing and exiting: both
 * are caught, and the verdict is one JSON line.
 */
export const VALIDATE_SCRIPT = `
import sys, json, io, importlib, contextlib
def verdict(ok, stage, error, parser):
    print(${JSON.stringify(MARK)} + json.dumps({"ok": ok, "stage": stage, "error": error, "parser": parser}), flush=True)
    sys.exit(0)
def first(options):
    tried = []
    for mod, attr in options:
        try:
            return getattr(importlib.import_module(mod), attr), mod + "." + attr
        except Exception as e:
            tried.append("%s.%s: %s" % (mod, attr, e))
    return None, "; ".join(tried)
argv = sys.argv[1:]
Flexible, where = first([("vllm.utils.argparse_utils", "FlexibleArgumentParser"), ("vllm.utils", "FlexibleArgumentParser")])
if Flexible is None:
    verdict(False, "import", "vLLM's FlexibleArgumentParser was not found: " + where, None)
Serve, serve_where = first([("vllm.entrypoints.cli.serve", "ServeSubcommand")])
err = io.StringIO()
used = where
try:
    with contextlib.redirect_stderr(err):
        if Serve is not None:
            used = serve_where + " + " + where
            top = Flexible(prog="vllm")
            subs = top.add_subparsers(dest="subparser")
            command = Serve()
            command.subparser_init(subs)
            args = top.parse_args(["serve"] + argv)
            command.validate(args)
        else:
            make, make_where = first([("vllm.entrypoints.openai.cli_args", "make_arg_parser")])
            if make is None:
                verdict(False, "import", "vLLM's serve parser was not found: " + serve_where + "; " + make_where, where)
            used = make_where + " + " + where
            parser = make(Flexible(prog="vllm serve"))
            parser.parse_args(argv)
except SystemExit as e:
    if e.code in (0, None):
        verdict(True, "done", None, used)
    lines = [l for l in err.getvalue().strip().splitlines() if l.strip()]
    message = next((l for l in reversed(lines) if "error:" in l), lines[-1] if lines else "the parser refused the arguments")
    verdict(False, "parser", message, used)
except Exception as e:
    verdict(False, "parser", "%s: %s" % (type(e).__name__, e), used)
verdict(True, "done", None, used)
`

export interface ValidatorDeps {
  readonly config: Config
  readonly pool: SshPool
  /** node1, where the llm container runs; null when it is not configured. */
  readonly target: SshTarget | null
  readonly logger: Logger
  readonly timeoutMs?: number
}

/** Launch validation (spec 1, 4.2 rules 2–3): the exact serve arguments through vLLM's parser, in the running llm container. */
export class LaunchValidator {
  constructor(private readonly deps: ValidatorDeps) {}

  async validate(entry: CatalogEntry, mode: RunMode, signal?: AbortSignal): Promise<ValidationResult> {
    const { config, pool, target } = this.deps
    let plan: ReturnType<typeof launchPlan>
    try {
      plan = launchPlan(config, entry, mode)
    } catch (err) {
      return { ok: false, stage: 'build', error: (err as Error).message, cmd_args: [], launch_cmd: '', parser: null }
    }
    const base = { cmd_args: [...plan.cmdArgs], launch_cmd: plan.launchCmd }
    if (target === null)
      return {
        ...base,
        ok: false,
        stage: 'connect',
        error: 'node1 is not configured: set NODE1_HOST and NODE1_USER',
        parser: null,
      }
    const container = config.llm.container
    const command = `docker exec ${shq(container)} python3 -c ${shq(VALIDATE_SCRIPT)} ${shqArgs(plan.serveArgs)}`
    let out
    try {
      out = await pool.exec(target, command, { timeoutMs: this.deps.timeoutMs ?? VALIDATE_TIMEOUT_MS, signal })
    } catch (err) {
      const stage = err instanceof SshError && err.kind === 'timeout' ? 'parser' : 'connect'
      return { ...base, ok: false, stage, error: `node1: ${(err as Error).message}`, parser: null }
    }
    const line = out.stdout
      .split('\n')
      .reverse()
      .find((l) => l.startsWith(MARK))
    if (line === undefined) {
      const said = (out.stderr || out.stdout).trim().split('\n').slice(-3).join(' ')
      if (/No such container|is not running/.test(said))
        return {
          ...base,
          ok: false,
          stage: 'container',
          error: `the llm container ${container} is not running on node1; validation runs vLLM's parser inside it, so start a model first`,
          parser: null,
        }
      return {
        ...base,
        ok: false,
        stage: 'parser',
        error: `the parser did not answer (exit ${out.code}): ${said}`,
        parser: null,
      }
    }
    const v = JSON.parse(line.slice(MARK.length)) as {
      ok: boolean
      stage: string
      error: string | null
      parser: string | null
    }
    this.deps.logger.info('launch validated', { model: entry.def.key, ok: v.ok, parser: v.parser })
    return { ...base, ok: v.ok, stage: v.stage, error: v.error, parser: v.parser }
  }
}
