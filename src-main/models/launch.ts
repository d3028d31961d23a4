import path from 'node:path'
import type { Config } from '../config/load'
import type { RunMode } from '../contract/models'
import { LocalPath } from '../contract/schemas'
import { remoteDir, shq, shqArgs } from '../ssh/quote'
import type { CatalogEntry } from './types'

/** The image the launcher's build-and-copy.sh builds and launch-cluster.sh runs by default. */
export const LLM_IMAGE = 'vllm-node'

/** Flags the swap sets itself: an entry's own copies are dropped so the engine listens where Tandem looks. */
const OWN_FLAGS = new Set(['--host', '--port'])

/** Everything a swap (and its validation) passes on: the serve arguments and the launcher command. */
export interface LaunchPlan {
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

/** Drops `--flag value` and `--flag=value` (underscores or hyphens) for the flags the swap sets itself. */
function withoutOwnFlags(args: readonly string[]): string[] {
  const out: string[] = []
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string
    const name = a.startsWith('--') ? (a.split('=')[0] as string).replace(/_/g, '-') : null
    if (name === null || !OWN_FLAGS.has(name)) {
      out.push(a)
      continue
    }
    if (!a.includes('=') && i + 1 < args.length && !(args[i + 1] as string).startsWith('--')) i++
  }
  return out
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
  const args = [source, '--host', '0.0.0.0', '--port', String(port), ...withoutOwnFlags(entry.launchArgs)]
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

/** The launcher's mode flags: `--solo` for node1 alone, none for the cluster (it finds its nodes). */
function modeFlags(mode: RunMode): string[] {
  return mode === 'solo' ? ['--solo'] : []
}

/** `cd <launcher> && [VLLM_SPARK_EXTRA_DOCKER_ARGS=…] ./launch-cluster.sh …`: every value single-quoted. */
function launcherCommand(config: Config, args: readonly string[], extra: string | null): string {
  const env = extra === null ? '' : `VLLM_SPARK_EXTRA_DOCKER_ARGS=${shq(extra)} `
  return `cd ${remoteDir(config.llm.launcherDir)} && ${env}./launch-cluster.sh ${shqArgs(args)}`
}

/** The whole launch of a catalog entry in a mode: serve arguments and the launcher command on node1. */
export function launchPlan(config: Config, entry: CatalogEntry, mode: RunMode): LaunchPlan {
  const cmdArgs = serveCommand(entry, config.llm.port)
  const extra = entry.def.local_path !== undefined ? bindMountArgs(entry.def.local_path) : null
  // -d: the launcher dispatches `vllm serve` inside the container and returns; the engine's output
  // goes to the container log, which the swap tails while the model loads.
  const launcher = [...modeFlags(mode), '-t', LLM_IMAGE, '--name', config.llm.container, '-d', 'exec', ...cmdArgs]
  return {
    cmdArgs,
    serveArgs: cmdArgs.slice(2),
    extraDockerArgs: extra,
    launchCmd: launcherCommand(config, launcher, extra),
    served: servedName(entry),
  }
}

/** Stops the llm container (and, in cluster mode, the workers' containers). */
export function stopCommand(config: Config, mode: RunMode): string {
  return launcherCommand(config, [...modeFlags(mode), '--name', config.llm.container, 'stop'], null)
}

/** `docker inspect` of the llm container's state and its last log lines, in one round trip. */
export function containerTailCommand(container: string, lines: number): string {
  const c = shq(container)
  return `docker inspect -f '{{.State.Running}}' ${c} 2>/dev/null || echo missing; docker logs --tail ${shq(lines)} ${c} 2>&1`
}
