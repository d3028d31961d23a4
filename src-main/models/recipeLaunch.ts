import type { LauncherCapability, LauncherInfo, RecipeSource } from '../contract/models'
import type { Knobs } from '../contract/schemas'
import { shq, shqArgs } from '../ssh/quote'
import { knobsToArgs } from './knobs'
import { launchScript, pyNumber, shellWords } from './launchScript'

/**
 * How a recipe-backed entry is launched (spec 4.2; docs/design/models.md, Recipes): through the
 * launcher's own runner, `run-recipe.py`, where the installed launcher has it, with Tandem's
 * choices as the runner's own options; elsewhere through the same launch script, built by Tandem
 * (launchScript.ts) and handed to `launch-cluster.sh --launch-script`, or run by `bash -c` where
 * the launcher takes no script. Env, mods, solo TP 1, `{param}` and the Ray default then behave as
 * the runner makes them behave.
 */

/** What Tandem decides for a recipe run: its nodes, its port, the knobs and its own engine args. */
export interface RecipeRunInput {
  readonly recipe: RecipeSource
  readonly solo: boolean
  readonly port: number
  /** The operator's knob override. */
  readonly knobs: Knobs
  /** Tandem's own engine args (launch.ts ownEngineArgs), passed after `--`. */
  readonly own: readonly string[]
  readonly launcher: Pick<LauncherInfo, 'capabilities'>
}

/** A recipe run: the runner's options, the same run as script overrides, and the engine args after `--`. */
export interface RecipeRun {
  readonly runnerFlags: readonly string[]
  readonly overrides: Readonly<Record<string, string>>
  readonly extraArgs: readonly string[]
  /** Whether Tandem's own script keeps (or adds) the Ray backend: only where the launcher defaults to Ray. */
  readonly useRay: boolean
  /** The launch script the runner makes of this run (Tandem's reading, identical by test). */
  readonly script: string
  /** `vllm serve …` as the script runs it, in words. */
  readonly cmdArgs: readonly string[]
}

/**
 * The runner's overrides fill only the placeholders a recipe has; a knob whose placeholder the
 * command lacks goes after `--` instead, where vLLM's last-wins makes it count.
 */
function knobRun(
  recipe: RecipeSource,
  knobs: Knobs,
): { flags: string[]; overrides: Record<string, string>; extra: string[] } {
  const flags: string[] = []
  const overrides: Record<string, string> = {}
  const extra: string[] = []
  const { 'gpu-memory-utilization': util, 'max-model-len': len, ...rest } = knobs
  // Only where the placeholder is the flag's own value: `--gpu-memory-utilization-gb {gpu_memory_utilization}` is not a fraction.
  if (util !== undefined) {
    if (/--gpu[-_]memory[-_]utilization[= ]+\{gpu_memory_utilization\}/.test(recipe.command)) {
      flags.push('--gpu-mem', String(util))
      overrides.gpu_memory_utilization = pyNumber(util, 'float')
    } else extra.push('--gpu-memory-utilization', String(util))
  }
  if (len !== undefined) {
    if (/--max[-_]model[-_]len[= ]+\{max_model_len\}/.test(recipe.command)) {
      flags.push('--max-model-len', String(len))
      overrides.max_model_len = pyNumber(len, 'int')
    } else extra.push('--max-model-len', String(len))
  }
  return { flags, overrides, extra: [...extra, ...knobsToArgs([], rest)] }
}

export function recipeRun(input: RecipeRunInput): RecipeRun {
  const { recipe } = input
  const knobs = knobRun(recipe, input.knobs)
  const flags = input.solo ? ['--tp', '1'] : []
  const overrides: Record<string, string> = input.solo ? { tensor_parallel: '1' } : {}
  flags.push('--port', String(input.port), ...knobs.flags)
  Object.assign(overrides, { port: pyNumber(input.port, 'int') }, knobs.overrides)
  // A recipe that writes its own port gets Tandem's after `--`: the engine must listen where Tandem looks.
  const portArgs = recipe.command.includes('{port}') ? [] : ['--port', String(input.port)]
  const extraArgs = [...portArgs, ...knobs.extra, ...input.own]
  const useRay = !input.solo && !input.launcher.capabilities.includes('no_ray_default')
  const script = launchScript(recipe, { overrides, solo: input.solo, extraArgs, useRay })
  return { runnerFlags: flags, overrides, extraArgs, useRay, script, cmdArgs: scriptCommand(script) }
}

/** The `vllm serve …` words of a launch script (what follows its `# Run the model` line). */
export function scriptCommand(script: string): string[] {
  const at = script.indexOf('# Run the model\n')
  const words = shellWords(at === -1 ? script : script.slice(at + '# Run the model\n'.length))
  if (words[0] !== 'vllm' || words[1] !== 'serve') throw new Error('the launch script does not run `vllm serve`')
  return words
}

/** The options a launch passes to the runner or to launch-cluster.sh, each gated by the caller. */
export interface RecipeLaunchFlags {
  readonly image: string
  readonly mods: readonly string[]
  /** `--solo`, `-n <addresses>` or nothing. */
  readonly nodeFlags: readonly string[]
  /** `--name <container>` or nothing. */
  readonly nameFlags: readonly string[]
}

/**
 * `python3 run-recipe.py recipes/<path> <nodes> <overrides> --name <c> -d -- <extra>`, from the
 * checkout (the runner reads the recipe as it is there now, and builds `-t` and `--apply-mod` itself).
 */
export function runnerArgs(run: RecipeRun, recipe: RecipeSource, f: RecipeLaunchFlags, daemon: boolean): string[] {
  const extra = run.extraArgs.length > 0 ? ['--', ...run.extraArgs] : []
  return [
    'run-recipe.py',
    `recipes/${recipe.path}`,
    ...f.nodeFlags,
    ...run.runnerFlags,
    ...f.nameFlags,
    ...(daemon ? ['-d'] : []),
    ...extra,
  ]
}

/** launch-cluster.sh's options before `--launch-script <file>`, in the order the runner passes them. */
export function scriptLauncherArgs(f: RecipeLaunchFlags): string[] {
  const solo = f.nodeFlags.includes('--solo') ? ['--solo'] : []
  const nodes = f.nodeFlags.filter((w) => w !== '--solo')
  return ['-t', f.image, ...f.mods.flatMap((m) => ['--apply-mod', m]), ...solo, '-d', ...nodes, ...f.nameFlags]
}

/**
 * A shell fragment that writes the script to a fresh temporary file on the head and runs `then`
 * with the file's path in `$tandem_script`; the file is removed afterwards, whatever `then` did.
 */
export function withScriptFile(script: string, then: string): string {
  return [
    `tandem_script=$(mktemp /tmp/tandem-launch-XXXXXX) || exit 1`,
    `printf '%s' ${shq(script)} > "$tandem_script" && chmod 0644 "$tandem_script"`,
    `( ${then} ); rc=$?; rm -f "$tandem_script"; exit $rc`,
  ].join('\n')
}

/** How a recipe is launched on this launcher: its runner, a launch script, or the script by `bash -c`. */
export function recipeRoute(launcher: Pick<LauncherInfo, 'capabilities'>): 'runner' | 'script' | 'exec' {
  const has = (c: LauncherCapability): boolean => launcher.capabilities.includes(c)
  if (has('run_recipe')) return 'runner'
  return has('launch_script') ? 'script' : 'exec'
}

/** `python3 <runner args>` quoted for the remote shell; no stdin, so the runner's build prompt cannot wait. */
export function runnerCommand(args: readonly string[]): string {
  return `python3 ${shqArgs(args)} < /dev/null`
}
