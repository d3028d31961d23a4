import path from 'node:path'
import type { Config } from '../config/load'
import type { LauncherCapability, LauncherInfo, Layout, RecipeSource, RunMode } from '../contract/models'
import { LocalPath, type NodeName } from '../contract/schemas'
import { remoteDir, shq, shqArgs } from '../ssh/quote'
import { gatewayEngineArgs, gatewayTailArgs } from './gatewayEngineArgs'
import { launcherLabel, MISSING_EFFECT } from './launcherCapabilities'
import type { CatalogEntry } from './types'
import {
  recipeRoute,
  recipeRun,
  runnerArgs,
  runnerCommand,
  scriptLauncherArgs,
  withScriptFile,
  type RecipeLaunchFlags,
} from './recipeLaunch'

/** The image the launcher's build-and-copy.sh builds and launch-cluster.sh runs by default. */
export const LLM_IMAGE = 'vllm-node'

/** Flags the swap sets itself: an entry's own copies are dropped so the engine listens where Tandem looks. */
const OWN_FLAGS = new Set(['--host', '--port'])
/** vLLM's parallelism flags (long names, and the short aliases its parser accepts). */
const TP_FLAGS = new Set(['--tensor-parallel-size', '-tp'])
const PP_FLAGS = new Set(['--pipeline-parallel-size', '-pp'])
const DP_FLAGS = new Set(['--data-parallel-size', '-dp'])
/** Every flag that sets a parallel size: together they say how many nodes a model spans. */
export const PARALLEL_SIZE_FLAGS: ReadonlySet<string> = new Set([...TP_FLAGS, ...PP_FLAGS, ...DP_FLAGS])
const BACKEND_FLAG = '--distributed-executor-backend'
/** Everything that fixes a layout: dropped for solo. */
const LAYOUT_FLAGS = new Set([...PARALLEL_SIZE_FLAGS, BACKEND_FLAG])
/** The container name the launcher uses when not given `--name`. */
export const LAUNCHER_CONTAINER = 'vllm_node'

/** Everything a swap (and its validation) passes on: the serve arguments and the launcher command. */
export interface LaunchPlan {
  /** Where the model runs: the nodes, the tensor-parallel size and who picks the distributed backend. */
  readonly layout: Layout
  /** The image the launcher runs. */
  readonly image: string
  /** Host directories bind-mounted at the same path (a local model's directory). */
  readonly mounts: readonly string[]
  /** `vllm serve` and its arguments, exactly as the engine receives them. */
  readonly cmdArgs: readonly string[]
  /** The arguments after `vllm serve` (what the argument parser validates). */
  readonly serveArgs: readonly string[]
  /** The extra `docker run` arguments for VLLM_SPARK_EXTRA_DOCKER_ARGS (a local model's bind mount). */
  readonly extraDockerArgs: string | null
  /** The shell command run on the head over SSH. */
  readonly launchCmd: string
  /** The name the llm serves (its /v1/models id). */
  readonly served: string
  /** The launcher mods the launch applies (paths inside the checkout). */
  readonly mods: readonly string[]
  /** A recipe-backed entry: its launch script, the runner's arguments (null without a runner) and its mods. */
  readonly recipe: RecipePlan | null
}

export interface RecipePlan {
  /** The launch script as Tandem builds it (the runner makes the same one). */
  readonly script: string
  /** `run-recipe.py <recipe> …` without daemon mode (what `--dry-run` is asked with); null when Tandem launches the script itself. */
  readonly runner: readonly string[] | null
  readonly mods: readonly string[]
}

/** The model id vLLM answers with: `--served-model-name` when given, else what it was told to serve. */
export function servedName(entry: CatalogEntry): string {
  return firstServedName(entry.launchArgs, entry.def.local_path ?? (entry.def.repo as string))
}

/** The first `--served-model-name` in `args`, else `fallback`. */
export function firstServedName(args: readonly string[], fallback: string): string {
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string
    const m = /^--served[-_]model[-_]name(?:=(.*))?$/.exec(a)
    if (!m) continue
    const v = m[1] ?? args[i + 1]
    if (v !== undefined && v !== '') return v.split(/\s+/)[0] as string
  }
  return fallback
}

/** A flag's name as vLLM's parser reads it (`--a_b=1` → `--a-b`); null for a value. */
function flagName(arg: string): string | null {
  if (arg.startsWith('--')) return (arg.split('=')[0] as string).replace(/_/g, '-')
  return /^-[a-z]{1,3}(=|$)/.test(arg) ? (arg.split('=')[0] as string) : null
}

/** Whether the word after a flag is its value (not the next flag). */
function takesNext(args: readonly string[], i: number): boolean {
  const a = args[i] as string
  const next = args[i + 1]
  return !a.includes('=') && next !== undefined && flagName(next) === null
}

/** Drops `--flag value` and `--flag=value` (underscores or hyphens) for the flags named. */
function withoutFlags(args: readonly string[], names: ReadonlySet<string>): string[] {
  const out: string[] = []
  for (let i = 0; i < args.length; i++) {
    const name = flagName(args[i] as string)
    if (name === null || !names.has(name)) out.push(args[i] as string)
    else if (takesNext(args, i)) i++
  }
  return out
}

/** The value of the last of the flags named, or null. */
function flagValue(args: readonly string[], names: ReadonlySet<string>): string | null {
  let value: string | null = null
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string
    const name = flagName(a)
    if (name === null || !names.has(name)) continue
    value = a.includes('=') ? a.slice(a.indexOf('=') + 1) : takesNext(args, i) ? (args[i + 1] as string) : null
  }
  return value
}

/** The parallelism an entry's args fix: tensor, pipeline and data parallel sizes, and the nodes they need. */
export interface Parallelism {
  readonly tp: number | null
  readonly pp: number | null
  readonly dp: number | null
  /** tp × pp × dp (one GPU per node), or null when the args fix none of them. */
  readonly nodes: number | null
  readonly backend: string | null
}

export function parallelism(args: readonly string[]): Parallelism {
  const size = (names: ReadonlySet<string>): number | null => {
    const v = flagValue(args, names)
    return v !== null && /^[1-9][0-9]{0,2}$/.test(v) ? Number(v) : null
  }
  const tp = size(TP_FLAGS)
  const pp = size(PP_FLAGS)
  const dp = size(DP_FLAGS)
  const fixed = tp !== null || pp !== null || dp !== null
  return {
    tp,
    pp,
    dp,
    nodes: fixed ? (tp ?? 1) * (pp ?? 1) * (dp ?? 1) : null,
    backend: flagValue(args, new Set([BACKEND_FLAG])),
  }
}

/** The chat template as the engine expects it: a path; a relative one lies inside a local model's directory. */
function chatTemplatePath(entry: CatalogEntry): string | null {
  const t = entry.def.chat_template
  if (t === undefined || t === '') return null
  if (entry.def.local_path !== undefined && !t.startsWith('/')) return path.posix.join(entry.def.local_path, t)
  return t
}

/**
 * Tandem's own engine args, after the entry's: the one place they are added, for every launch (a
 * recipe launch passes them to the runner after `--`).
 */
export function ownEngineArgs(entry: CatalogEntry): string[] {
  const template = chatTemplatePath(entry)
  return template === null ? [] : ['--chat-template', template]
}

/** `vllm serve <repo or local_path> --host 0.0.0.0 --port <llm port> <engine args> <Tandem's own args>`. */
export function serveCommand(entry: CatalogEntry, port: number): string[] {
  const source = entry.def.local_path ?? entry.def.repo
  if (source === undefined) throw new Error(`model ${entry.def.key} has neither repo nor local_path`)
  const args = [source, '--host', '0.0.0.0', '--port', String(port), ...withoutFlags(entry.launchArgs, OWN_FLAGS)]
  return ['vllm', 'serve', ...args, ...ownEngineArgs(entry)]
}

/**
 * The bind mount of a local model at the same path in the container. launch-cluster.sh splices
 * VLLM_SPARK_EXTRA_DOCKER_ARGS into `docker run` unquoted: on node1 the words are split but quotes
 * are not removed, on workers the string is parsed again by ssh's shell. A quote inside would reach
 * docker literally on node1, so the path is held to the LocalPath whitelist here, at the point of
 * use (no blank, quote, glob or shell character can split or change it), and the whole value is
 * single-quoted for the remote shell where the command is built.
 */
export function bindMountArgs(localPath: string): string {
  const checked = LocalPath.safeParse(localPath)
  if (!checked.success || localPath.includes(':'))
    throw new Error(`local path ${JSON.stringify(localPath)} is not launchable`)
  return `-v ${localPath}:${localPath}`
}

/** A launch the installed launcher (or the cluster) cannot make: refused before anything is stopped. */
export class LaunchRefused extends Error {
  constructor(
    message: string,
    readonly capability: LauncherCapability | null,
  ) {
    super(message)
  }
}

const UPDATE_FIX = 'update the launcher in Services → Updates'

function requireCapability(launcher: LauncherInfo, cap: LauncherCapability, what: string): void {
  if (launcher.capabilities.includes(cap)) return
  throw new LaunchRefused(
    `${launcherLabel(launcher)} cannot ${what}: ${MISSING_EFFECT[cap]}; ${UPDATE_FIX}, or choose another layout`,
    cap,
  )
}

/**
 * The nodes a placement runs on, head first, and the cluster-link addresses the launcher's `-n`
 * takes (head first); null addresses leave `-n` out so the launcher finds its nodes (node1+node2).
 */
export interface PlacementNodes {
  readonly nodes: readonly NodeName[]
  readonly addresses: readonly string[] | null
}

/** Solo on node1, as the spec's single-llm path has it. */
export const NODE1_SOLO: PlacementNodes = { nodes: ['node1'], addresses: null }

/** How many nodes an entry's own parallelism flags fix, or `fallback` when they fix none. */
export function nodesNeeded(args: readonly string[], fallback: number): number {
  return parallelism(args).nodes ?? fallback
}

/**
 * The nodes the spec's modes mean on this cluster: solo is node1; cluster is node1 and the next
 * configured nodes the entry's parallelism needs (two when it fixes none).
 */
export function nodesForMode(args: readonly string[], mode: RunMode, configured: readonly NodeName[]): NodeName[] {
  if (mode === 'solo') return ['node1']
  const need = nodesNeeded(args, 2)
  if (need > configured.length)
    throw new LaunchRefused(
      `needs ${need} nodes (${parallelText(parallelism(args))}, one GPU per Spark); this cluster has ${configured.length}`,
      null,
    )
  return configured.slice(0, need)
}

function parallelText(p: Parallelism): string {
  return `tensor parallel ${p.tp ?? 1} × pipeline parallel ${p.pp ?? 1} × data parallel ${p.dp ?? 1}`
}

/**
 * The layout of an entry on its nodes, and the engine args that make it: one node drops every
 * parallelism flag; k nodes add `--tensor-parallel-size k` unless the entry fixes its own
 * parallelism (which must then need exactly k nodes), and the distributed backend unless the entry
 * or the launcher picks it.
 */
export function layoutArgs(
  args: readonly string[],
  nodes: readonly NodeName[],
  launcher: Pick<LauncherInfo, 'capabilities'> | null,
): { args: string[]; layout: Layout } {
  if (nodes.length === 1)
    return {
      args: withoutFlags(args, LAYOUT_FLAGS),
      layout: { mode: 'solo', nodes: [...nodes], tensor_parallel: 1, backend: null },
    }
  const p = parallelism(args)
  if (p.nodes !== null && p.nodes !== nodes.length)
    throw new LaunchRefused(
      `needs ${p.nodes} nodes (${parallelText(p)}, one GPU per Spark); ${nodes.length} were chosen (${nodes.join('+')})`,
      null,
    )
  const out = [...args]
  if (p.nodes === null) out.push('--tensor-parallel-size', String(nodes.length))
  let backend: Layout['backend'] = 'entry'
  if (p.backend === null && launcher?.capabilities.includes('backend_flag') === true) backend = 'launcher'
  else if (p.backend === null) {
    out.push(BACKEND_FLAG, 'ray')
    backend = 'ray'
  }
  const tp = p.tp ?? (p.nodes === null ? nodes.length : 1)
  return { args: out, layout: { mode: 'cluster', nodes: [...nodes], tensor_parallel: tp, backend } }
}

/** The launcher's node flags: `--solo` for one node, `-n <addresses>` for a chosen set, none to let it find node1+node2. */
function nodeFlags(on: PlacementNodes, launcher: LauncherInfo): string[] {
  if (on.nodes.length === 1) return launcher.capabilities.includes('solo') ? ['--solo'] : []
  if (on.addresses === null) return []
  requireCapability(launcher, 'nodes_flag', `be told to run on ${on.nodes.join('+')}`)
  return ['-n', on.addresses.join(',')]
}

/** `--name <container>` where the launcher takes it (refused where it must and cannot). */
function nameFlags(config: Config, launcher: LauncherInfo): string[] {
  if (launcher.capabilities.includes('name_flag')) return ['--name', config.llm.container]
  if (config.llm.container !== LAUNCHER_CONTAINER)
    requireCapability(launcher, 'name_flag', `name the container ${config.llm.container} (LLM_CONTAINER)`)
  return []
}

/** `-t <image>` and `--name <container>` where the launcher takes them (refused where it must and cannot). */
function identityFlags(config: Config, launcher: LauncherInfo, image: string): string[] {
  const out: string[] = []
  if (launcher.capabilities.includes('image_flag')) out.push('-t', image)
  else if (image !== LLM_IMAGE) requireCapability(launcher, 'image_flag', `run the image ${image}`)
  return [...out, ...nameFlags(config, launcher)]
}

/** A recipe's mod as the launcher takes it: a relative path of plain segments inside the checkout. */
export function modPath(mod: string): string {
  const segments = mod.split('/')
  if (mod.startsWith('/') || !segments.every((s) => /^[A-Za-z0-9._-]+$/.test(s) && s !== '.' && s !== '..'))
    throw new LaunchRefused(`mod ${JSON.stringify(mod)} is not a path inside the launcher checkout`, null)
  return mod
}

/** `cd <launcher> && [VLLM_SPARK_EXTRA_DOCKER_ARGS=…] <command>`. */
function inLauncherDir(config: Config, extra: string | null, command: string): string {
  const env = extra === null ? '' : `VLLM_SPARK_EXTRA_DOCKER_ARGS=${shq(extra)} `
  return `cd ${remoteDir(config.llm.launcherDir)} && ${env}${command}`
}

/** `cd <launcher> && [VLLM_SPARK_EXTRA_DOCKER_ARGS=…] ./launch-cluster.sh …`: every value single-quoted. */
function launcherCommand(config: Config, args: readonly string[], extra: string | null): string {
  return inLauncherDir(config, extra, `./launch-cluster.sh ${shqArgs(args)}`)
}

/**
 * `docker exec -d` of the serve command in the running head container, its output in the container
 * log: for launchers whose own `exec` would split JSON args or stop the cluster afterwards.
 */
export function dispatchCommand(container: string, cmdArgs: readonly string[]): string {
  return `docker exec -d ${shq(container)} bash -c ${shq(`${shqArgs(cmdArgs)} >> /proc/1/fd/1 2>&1`)}`
}

/** What every launch of an entry shares: its image, mods, the local model's mount and the launcher flags. */
interface LaunchParts {
  readonly config: Config
  readonly entry: CatalogEntry
  readonly on: PlacementNodes
  readonly launcher: LauncherInfo
  readonly image: string
  readonly mods: readonly string[]
  readonly extra: string | null
}

/**
 * -d exec: the launcher dispatches `vllm serve` inside the container and returns; the engine's
 * output goes to the container log, which the swap tails while the model loads. A launcher whose
 * exec cannot do that starts the cluster, and Tandem dispatches the same words itself.
 */
function execCommand(p: LaunchParts, words: readonly string[]): string {
  const { config, launcher } = p
  const flags = [
    ...nodeFlags(p.on, launcher),
    ...identityFlags(config, launcher, p.image),
    ...p.mods.flatMap((m) => ['--apply-mod', m]),
  ]
  const viaExec = launcher.capabilities.includes('daemon_exec') && launcher.capabilities.includes('quoted_exec')
  return viaExec
    ? launcherCommand(config, [...flags, '-d', 'exec', ...words], p.extra)
    : `${launcherCommand(config, [...flags, '-d', 'start'], p.extra)} && ${dispatchCommand(config.llm.container, words)}`
}

/**
 * A recipe-backed entry: through the launcher's runner where it has one, else its launch script
 * handed to `--launch-script`, else that script run by `bash -c` in the container (recipeLaunch.ts).
 */
function recipeCommand(
  p: LaunchParts,
  recipe: RecipeSource,
): { launchCmd: string; cmdArgs: string[]; plan: RecipePlan } {
  const { config, launcher } = p
  const solo = p.on.nodes.length === 1
  const input = {
    recipe,
    solo,
    port: config.llm.port,
    knobs: p.entry.knobs ?? {},
    own: ownEngineArgs(p.entry),
    launcher,
  }
  // The gateway's names and forced usage follow the recipe's own command, after `--`.
  const words = recipeRun(input).cmdArgs.slice(2)
  const tail = gatewayTailArgs(words, firstServedName(words, words[0] ?? p.entry.def.key), p.entry.def.key)
  const run = recipeRun({ ...input, own: [...input.own, ...tail] })
  const route = recipeRoute(launcher)
  // The runner and --launch-script always name the image (-t).
  if (route !== 'exec') requireCapability(launcher, 'image_flag', `run the image ${p.image}`)
  const f: RecipeLaunchFlags = {
    image: p.image,
    mods: p.mods,
    nodeFlags: nodeFlags(p.on, launcher),
    nameFlags: nameFlags(config, launcher),
  }
  const cmdArgs = [...run.cmdArgs]
  if (route === 'runner') {
    const launchCmd = inLauncherDir(config, p.extra, runnerCommand(runnerArgs(run, recipe, f, true)))
    return { launchCmd, cmdArgs, plan: { script: run.script, runner: runnerArgs(run, recipe, f, false), mods: p.mods } }
  }
  const plan = { script: run.script, runner: null, mods: p.mods }
  if (route === 'script') {
    const launch = `${launcherCommand(config, scriptLauncherArgs(f), p.extra)} --launch-script "$tandem_script"`
    return { launchCmd: withScriptFile(run.script, launch), cmdArgs, plan }
  }
  return { launchCmd: execCommand(p, ['bash', '-c', run.script]), cmdArgs, plan }
}

/**
 * The whole launch of a catalog entry on its nodes, for the launcher installed on the head: serve
 * arguments, layout and the command run on the head. Throws LaunchRefused for what cannot be launched.
 */
export function launchPlan(
  config: Config,
  entry: CatalogEntry,
  on: PlacementNodes,
  launcher: LauncherInfo,
): LaunchPlan {
  const head = on.nodes[0] ?? 'node1'
  if (!launcher.found) throw new LaunchRefused(launcher.error ?? `the launcher on ${head} was not found`, null)
  const source = entry.def.local_path ?? entry.def.repo
  if (source === undefined) throw new Error(`model ${entry.def.key} has neither repo nor local_path`)
  const { args, layout } = layoutArgs(entry.launchArgs, on.nodes, launcher)
  if (on.nodes.length === 1) requireCapability(launcher, 'solo', `run a model on ${head} alone`)
  const local = entry.def.local_path
  if (local !== undefined) requireCapability(launcher, 'extra_docker_args', `bind-mount the local model ${local}`)
  const extra = local !== undefined ? bindMountArgs(local) : null
  const image = entry.def.container ?? LLM_IMAGE
  const mods = (entry.def.mods ?? []).map(modPath)
  if (mods.length > 0) requireCapability(launcher, 'apply_mod', `apply the mods ${mods.join(', ')}`)
  const parts: LaunchParts = { config, entry, on, launcher, image, mods, extra }
  const recipe = entry.def.recipe
  let how: { launchCmd: string; cmdArgs: string[]; plan: RecipePlan | null }
  if (recipe !== undefined) how = recipeCommand(parts, recipe)
  else {
    const engineArgs = gatewayEngineArgs(args, servedName(entry), entry.def.key)
    const cmdArgs = serveCommand({ ...entry, launchArgs: engineArgs }, config.llm.port)
    how = { launchCmd: execCommand(parts, cmdArgs), cmdArgs, plan: null }
  }
  return {
    layout,
    image,
    mounts: local !== undefined ? [local] : [],
    cmdArgs: how.cmdArgs,
    serveArgs: how.cmdArgs.slice(2),
    extraDockerArgs: extra,
    launchCmd: how.launchCmd,
    served: firstServedName(how.cmdArgs.slice(2), servedName(entry)),
    mods,
    recipe: how.plan,
  }
}

/** Stops a placement's engine on its head (and, across nodes, the workers' containers). */
export function stopCommand(config: Config, on: PlacementNodes, launcher: LauncherInfo): string {
  const name = launcher.capabilities.includes('name_flag') ? ['--name', config.llm.container] : []
  return launcherCommand(config, [...nodeFlags(on, launcher), ...name, 'stop'], null)
}

/** `docker inspect` of the llm container's state and its last log lines, in one round trip. */
export function containerTailCommand(container: string, lines: number): string {
  const c = shq(container)
  return `docker inspect -f '{{.State.Running}}' ${c} 2>/dev/null || echo missing; docker logs --tail ${shq(lines)} ${c} 2>&1`
}
