import { randomBytes } from 'node:crypto'
import type { Config } from '../config/load'
import type { LauncherInfo, ValidationResult } from '../contract/models'
import type { NodeName } from '../contract/schemas'
import type { Logger } from '../lib/logger'
import { SshError, type SshPool, type SshTarget } from '../ssh/pool'
import { remoteDir, shq, shqArgs } from '../ssh/quote'
import { HF_HOME_DIR } from './disk'
import { launchPlan, LaunchRefused, type LaunchPlan, type PlacementNodes } from './launch'
import { imageBuildCommand } from './recipes'
import type { CatalogEntry } from './types'

/**
 * Starting a container and importing vLLM (torch) in it takes seconds, longer on a cold page
 * cache; a parser that has not answered by then never will.
 */
export const VALIDATE_TIMEOUT_MS = 120_000

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
  /** A node's SSH target; null when it is not configured. Validation runs on the placement's head. */
  readonly targetOf: (node: NodeName) => SshTarget | null
  readonly logger: Logger
  /** The launcher on a node as last read (its generation decides the launch command). */
  readonly launcherOn: (node: NodeName) => Promise<LauncherInfo>
  readonly timeoutMs?: number
}

/** The hub cache the launcher mounts: HF_HOME where the launcher honours it, else the default. */
function hubCacheMount(launcher: LauncherInfo): string {
  const dir = launcher.capabilities.includes('hf_home') ? HF_HOME_DIR : '$HOME/.cache/huggingface'
  return `-v "${dir}":/root/.cache/huggingface`
}

/** A shell line printing a verdict the validation could not reach (its own set-up failed): ok null. */
const UNVERIFIED_FN = `tandem_unverified() { printf '%s{"ok":null,"stage":"%s","error":"%s","parser":null}\\n' ${shq(MARK)} "$1" "$2"; exit 0; }`
/** Printed when the launcher's runner refuses the run (its own words follow). */
export const RUNNER_REFUSED = 'TANDEM_RUNNER_REFUSED'

/**
 * What runs in the throwaway container: the mods applied as the launcher applies them (each
 * unpacked, then its run.sh run from its own folder with WORKSPACE_DIR the container's working
 * directory), then the launch script itself with `vllm` standing for vLLM's parser, so the
 * arguments are judged after the script's env and expansions and against the patched vLLM.
 */
export function containerPrelude(mods: readonly string[]): string {
  const lines = [UNVERIFIED_FN, 'tandem_work=$PWD']
  if (mods.length > 0) {
    lines.push(
      "tandem_mods=$(mktemp -d) || tandem_unverified mods 'no temporary directory in the validation container'",
      'tar -x -C "$tandem_mods" || tandem_unverified mods \'the mods could not be unpacked in the validation container\'',
      ...mods.map(
        (m) =>
          `( export WORKSPACE_DIR="$tandem_work" && cd "$tandem_mods"/${shq(m)} && chmod +x run.sh && ./run.sh ) >&2 || tandem_unverified mods ${shq(`the mod ${m} failed in the validation container (without network or GPU); the launch applies it for real`)}`,
      ),
    )
  }
  lines.push(
    `TANDEM_VALIDATE_PY=${shq(VALIDATE_SCRIPT)}`,
    'vllm() { if [ "$1" = serve ]; then shift; fi; python3 -c "$TANDEM_VALIDATE_PY" "$@"; exit $?; }',
    '',
  )
  return lines.join('\n')
}

const EPILOGUE = "\ntandem_unverified container 'the launch script ended without running vllm serve'\n"

/** The launch script on the head in "$t/launch.sh": asked of the launcher's runner, or written as Tandem builds it. */
function scriptStep(plan: LaunchPlan, launcherDir: string): string[] {
  const runner = plan.recipe?.runner ?? null
  if (runner === null) {
    const script = plan.recipe?.script ?? `#!/bin/bash\n${shqArgs(plan.cmdArgs)}\n`
    return [`printf '%s' ${shq(script)} > "$t/launch.sh"`]
  }
  return [
    `(cd ${remoteDir(launcherDir)} && python3 ${shqArgs([...runner, '--dry-run'])} < /dev/null) > "$t/dry" 2>&1`,
    `awk 'f && /^=== What would be executed ===$/ {exit} f {print} /^=== Generated Launch Script ===$/ {f=1}' "$t/dry" > "$t/launch.sh"`,
    `[ -s "$t/launch.sh" ] || { echo ${RUNNER_REFUSED}; tail -n 20 "$t/dry"; exit 0; }`,
  ]
}

/**
 * vLLM's parser in a throwaway container of the entry's own image, with the mounts a real launch
 * makes (the hub cache, a local model's directory at the same path) and the launch's mods applied
 * there, on the launch script the launcher runs (its runner's own `--dry-run` where it has one), so
 * a chat template a mod writes, a flag a mod adds, the env and the model path are judged as the
 * engine would see them. No network, removed when done, named so it never meets the llm container:
 * the loaded model is not touched. A missing image or mod is definitive; a failure of this set-up
 * itself (a mod that needs the network, the container not answering) leaves the verdict open.
 */
export function validationCommand(plan: LaunchPlan, launcher: LauncherInfo, launcherDir: string): string {
  const name = `tandem-validate-${randomBytes(4).toString('hex')}`
  const mounts = plan.mounts.map((m) => `-v ${shq(`${m}:${m}:ro`)}`)
  const image = shq(plan.image)
  const dir = remoteDir(launcherDir)
  const mods = plan.mods
  const modsCheck = mods.map(
    (m) =>
      `[ -f ${dir}/${shq(m)}/run.sh ] || { echo ${shq(`${MARK}{"ok":false,"stage":"launcher","error":"the mod ${m} (its run.sh) is not in the launcher checkout","parser":null}`)}; exit 0; }`,
  )
  const modsTar = mods.length > 0 ? `tar -C ${dir} -cf - -- ${shqArgs(mods)}` : 'true'
  return [
    `docker image inspect ${image} >/dev/null 2>&1 || { echo ${shq(`${MARK}{"ok":false,"stage":"image","error":null,"parser":null}`)}; exit 0; }`,
    ...modsCheck,
    `t=$(mktemp -d /tmp/tandem-validate-XXXXXX) || { echo ${shq(`${MARK}{"ok":null,"stage":"container","error":"no temporary directory on the head","parser":null}`)}; exit 0; }`,
    `trap 'rm -rf "$t"' EXIT`,
    ...scriptStep(plan, launcherDir),
    `{ printf '%s' ${shq(containerPrelude(mods))}; cat "$t/launch.sh"; printf '%s' ${shq(EPILOGUE)}; } > "$t/inner"`,
    [
      `${modsTar} | docker run -i --rm --network none -e HF_HUB_OFFLINE=1 --entrypoint bash`,
      `--name ${shq(name)}`,
      hubCacheMount(launcher),
      ...mounts,
      image,
      '-c "$(cat "$t/inner")"',
    ].join(' '),
  ].join('\n')
}

type Verdict = Pick<ValidationResult, 'ok' | 'stage' | 'error' | 'parser'>

/** Launch validation (spec 1, 4.2 rules 2–3): the exact serve arguments through vLLM's parser, loaded model or not. */
export class LaunchValidator {
  constructor(private readonly deps: ValidatorDeps) {}

  async validate(entry: CatalogEntry, on: PlacementNodes, signal?: AbortSignal): Promise<ValidationResult> {
    const { config } = this.deps
    const head = on.nodes[0] ?? 'node1'
    const target = this.deps.targetOf(head)
    if (target === null) return { ...EMPTY, stage: 'connect', error: `${head} is not configured` }
    const launcher = await this.deps.launcherOn(head)
    let plan: LaunchPlan
    try {
      plan = launchPlan(config, entry, on, launcher)
    } catch (err) {
      const stage = err instanceof LaunchRefused ? 'launcher' : 'build'
      return { ...EMPTY, stage, error: (err as Error).message }
    }
    const base = { cmd_args: [...plan.cmdArgs], launch_cmd: plan.launchCmd }
    const v = await this.run(target, head, plan, launcher, signal)
    this.deps.logger.info('launch validated', { model: entry.def.key, ok: v.ok, stage: v.stage, parser: v.parser })
    if (v.stage === 'image')
      return {
        ...base,
        ...v,
        error: `the image ${plan.image} is not on ${head}: build it in the launcher checkout with ${imageBuildCommand(plan.image, entry.def.build_args ?? [], null)} (add -c <address> to copy it to the other nodes), then validate again`,
      }
    return { ...base, ...v }
  }

  private async run(
    target: SshTarget,
    head: NodeName,
    plan: LaunchPlan,
    launcher: LauncherInfo,
    signal?: AbortSignal,
  ): Promise<Verdict> {
    let out
    try {
      out = await this.deps.pool.exec(target, validationCommand(plan, launcher, this.deps.config.llm.launcherDir), {
        timeoutMs: this.deps.timeoutMs ?? VALIDATE_TIMEOUT_MS,
        signal,
      })
    } catch (err) {
      // The validation could not run to its verdict: nothing is known either way.
      const stage = err instanceof SshError && err.kind === 'timeout' ? 'timeout' : 'connect'
      return { ok: null, stage, error: `${head}: ${(err as Error).message}`, parser: null }
    }
    const refused = runnerRefusal(out.stdout)
    if (refused !== null) return { ok: false, stage: 'launcher', error: refused, parser: null }
    const line = out.stdout
      .split('\n')
      .reverse()
      .find((l) => l.startsWith(MARK))
    if (line === undefined) {
      const said = (out.stderr || out.stdout).trim().split('\n').slice(-3).join(' ')
      return {
        ok: null,
        stage: 'container',
        error: `the validation container did not answer (exit ${out.code}): ${said}`,
        parser: null,
      }
    }
    return JSON.parse(line.slice(MARK.length)) as Verdict
  }
}

/** The runner's own reason for refusing a run (its `Error: …` line), or null when it did not refuse. */
function runnerRefusal(stdout: string): string | null {
  const at = stdout.indexOf(`${RUNNER_REFUSED}\n`)
  if (at === -1) return null
  const said = stdout.slice(at + RUNNER_REFUSED.length + 1).split('\n')
  const error =
    said.find((l) => l.startsWith('Error')) ??
    said
      .filter((l) => l.trim() !== '')
      .slice(-2)
      .join(' ')
  return `the launcher's run-recipe.py refuses the run: ${error.trim().slice(0, 500)}`
}

const EMPTY: ValidationResult = { ok: false, stage: 'build', error: null, cmd_args: [], launch_cmd: '', parser: null }
