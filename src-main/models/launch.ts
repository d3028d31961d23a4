import path from 'node:path'
import type { Config } from '../config/load'
import type { LauncherCapability, LauncherInfo, Layout, RunMode } from '../contract/models'
import { LocalPath, type NodeName } from '../contract/schemas'
import { remoteDir, shq, shqArgs } from '../ssh/quote'
import { launcherLabel, MISSING_EFFECT } from './launcherCapabilities'
import type { CatalogEntry } from './types'

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
/** One GPU per Spark: a cluster of node1 and node2. */
export const CLUSTER_NODES: readonly NodeName[] = ['node1', 'node2']

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
  /** The shell command run on node1 over SSH. */
  readonly launchCmd: string
  /** The name the llm serves (its /v1/models id). */
  readonly served: string
}

/** The model id vLLM answers with: `--served-model-name` when given, else what it was told to serve. */
export function servedName(entry: CatalogEntry): string {
  const args = entry.launchArgs
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string
    const m = /^--served[-_]model[-_]name(?:=(.*))?$/.exec(a)
    if (!m) continue
    const v = m[1] ?? args[i + 1]
    if (v !== undefined && v !== '') return v.split(/\s+/)[0] as string
  }
  return entry.def.local_path ?? (entry.def.repo as string)
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

/** `vllm serve <repo or local_path> --host 0.0.0.0 --port <llm port> <engine args> [--chat-template <path>]`. */
export function serveCommand(entry: CatalogEntry, port: number): string[] {
  const source = entry.def.local_path ?? entry.def.repo
  if (source === undefined) throw new Error(`model ${entry.def.key} has neither repo nor local_path`)
  const args = [source, '--host', '0.0.0.0', '--port', String(port), ...withoutFlags(entry.launchArgs, OWN_FLAGS)]
  const template = chatTemplatePath(entry)
  if (template !== null) args.push('--chat-template', template)
  return ['vllm', 'serve', ...args]
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
 * The layout of an entry in a mode, and the engine args that make it: solo drops every
 * parallelism flag; cluster adds `--tensor-parallel-size 2` unless the entry fixes its own
 * parallelism, and the distributed backend unless the entry or the launcher picks it.
 */
export function layoutArgs(
  args: readonly string[],
  mode: RunMode,
  launcher: Pick<LauncherInfo, 'capabilities'> | null,
): { args: string[]; layout: Layout } {
  if (mode === 'solo')
    return {
      args: withoutFlags(args, LAYOUT_FLAGS),
      layout: { mode, nodes: ['node1'], tensor_parallel: 1, backend: null },
    }
  const p = parallelism(args)
  const need = p.nodes ?? CLUSTER_NODES.length
  if (need > CLUSTER_NODES.length)
    throw new LaunchRefused(
      `needs ${need} nodes (tensor parallel ${p.tp ?? 1} × pipeline parallel ${p.pp ?? 1} × data parallel ${p.dp ?? 1}, one GPU per Spark); this cluster has ${CLUSTER_NODES.length}`,
      null,
    )
  const out = [...args]
  if (p.nodes === null) out.push('--tensor-parallel-size', String(CLUSTER_NODES.length))
  let backend: Layout['backend'] = 'entry'
  if (p.backend === null && launcher?.capabilities.includes('backend_flag') === true) backend = 'launcher'
  else if (p.backend === null) {
    out.push(BACKEND_FLAG, 'ray')
    backend = 'ray'
  }
  return {
    args: out,
    layout: { mode, nodes: CLUSTER_NODES.slice(0, need), tensor_parallel: p.tp ?? (p.nodes === null ? 2 : 1), backend },
  }
}

/** The launcher's mode flags: `--solo` for node1 alone, none for the cluster (it finds its nodes). */
function modeFlags(mode: RunMode, launcher: LauncherInfo): string[] {
  return mode === 'solo' && launcher.capabilities.includes('solo') ? ['--solo'] : []
}

/** `-t <image>` and `--name <container>` where the launcher takes them (refused where it must and cannot). */
function identityFlags(config: Config, launcher: LauncherInfo, image: string): string[] {
  const out: string[] = []
  if (launcher.capabilities.includes('image_flag')) out.push('-t', image)
  else if (image !== LLM_IMAGE) requireCapability(launcher, 'image_flag', `run the image ${image}`)
  if (launcher.capabilities.includes('name_flag')) out.push('--name', config.llm.container)
  else if (config.llm.container !== LAUNCHER_CONTAINER)
    requireCapability(launcher, 'name_flag', `name the container ${config.llm.container} (LLM_CONTAINER)`)
  return out
}

/** A recipe's mod as the launcher takes it: a relative path of plain segments inside the checkout. */
function modPath(mod: string): string {
  const segments = mod.split('/')
  if (mod.startsWith('/') || !segments.every((s) => /^[A-Za-z0-9._-]+$/.test(s) && s !== '.' && s !== '..'))
    throw new LaunchRefused(`mod ${JSON.stringify(mod)} is not a path inside the launcher checkout`, null)
  return mod
}

/** `cd <launcher> && [VLLM_SPARK_EXTRA_DOCKER_ARGS=…] ./launch-cluster.sh …`: every value single-quoted. */
function launcherCommand(config: Config, args: readonly string[], extra: string | null): string {
  const env = extra === null ? '' : `VLLM_SPARK_EXTRA_DOCKER_ARGS=${shq(extra)} `
  return `cd ${remoteDir(config.llm.launcherDir)} && ${env}./launch-cluster.sh ${shqArgs(args)}`
}

/**
 * `docker exec -d` of the serve command in the running head container, its output in the container
 * log: for launchers whose own `exec` would split JSON args or stop the cluster afterwards.
 */
export function dispatchCommand(container: string, cmdArgs: readonly string[]): string {
  return `docker exec -d ${shq(container)} bash -c ${shq(`${shqArgs(cmdArgs)} >> /proc/1/fd/1 2>&1`)}`
}

/**
 * The whole launch of a catalog entry in a mode, for the launcher that is installed: serve
 * arguments, layout and the command on node1. Throws LaunchRefused for what cannot be launched.
 */
export function launchPlan(config: Config, entry: CatalogEntry, mode: RunMode, launcher: LauncherInfo): LaunchPlan {
  if (!launcher.found) throw new LaunchRefused(launcher.error ?? 'the launcher on node1 was not found', null)
  const source = entry.def.local_path ?? entry.def.repo
  const { args, layout } = layoutArgs(entry.launchArgs, mode, launcher)
  if (mode === 'solo') requireCapability(launcher, 'solo', 'run a model on node1 alone')
  const cmdArgs = serveCommand({ ...entry, launchArgs: args }, config.llm.port)
  const local = entry.def.local_path
  if (local !== undefined) requireCapability(launcher, 'extra_docker_args', `bind-mount the local model ${local}`)
  const extra = local !== undefined ? bindMountArgs(local) : null
  const image = entry.def.container ?? LLM_IMAGE
  const mods = (entry.def.mods ?? []).map(modPath)
  if (mods.length > 0) requireCapability(launcher, 'apply_mod', `apply the mods ${mods.join(', ')}`)
  const flags = [
    ...modeFlags(mode, launcher),
    ...identityFlags(config, launcher, image),
    ...mods.flatMap((m) => ['--apply-mod', m]),
  ]
  // -d exec: the launcher dispatches `vllm serve` inside the container and returns; the engine's
  // output goes to the container log, which the swap tails while the model loads. A launcher whose
  // exec cannot do that starts the cluster, and Tandem dispatches the same words itself.
  const viaExec = launcher.capabilities.includes('daemon_exec') && launcher.capabilities.includes('quoted_exec')
  const launchCmd = viaExec
    ? launcherCommand(config, [...flags, '-d', 'exec', ...cmdArgs], extra)
    : `${launcherCommand(config, [...flags, '-d', 'start'], extra)} && ${dispatchCommand(config.llm.container, cmdArgs)}`
  if (source === undefined) throw new Error(`model ${entry.def.key} has neither repo nor local_path`)
  return {
    layout,
    image,
    mounts: local !== undefined ? [local] : [],
    cmdArgs,
    serveArgs: cmdArgs.slice(2),
    extraDockerArgs: extra,
    launchCmd,
    served: servedName(entry),
  }
}

/** Stops the llm container (and, in cluster mode, the workers' containers). */
export function stopCommand(config: Config, mode: RunMode, launcher: LauncherInfo): string {
  const name = launcher.capabilities.includes('name_flag') ? ['--name', config.llm.container] : []
  return launcherCommand(config, [...modeFlags(mode, launcher), ...name, 'stop'], null)
}

/** `docker inspect` of the llm container's state and its last log lines, in one round trip. */
export function containerTailCommand(container: string, lines: number): string {
  const c = shq(container)
  return `docker inspect -f '{{.State.Running}}' ${c} 2>/dev/null || echo missing; docker logs --tail ${shq(lines)} ${c} 2>&1`
}
