import { z } from 'zod'
import { nodeNames, type Config } from '../config/load'
import { ApiError } from '../contract/errors'
import type { DownloadTarget, RunMode } from '../contract/models'
import { ModelRepo, type NodeName } from '../contract/schemas'
import { systemClock, type Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import type { JobControl, JobRegistry } from '../platform/jobs'
import type { NodesModule } from '../nodes/module'
import { SshError, type ExecResult, type SshTarget } from '../ssh/pool'
import { RemoteIdle, runInProcessGroup } from '../ssh/processGroup'
import {
  copyCommand,
  copyPlan,
  downloadCommand,
  hubInfoCommand,
  parseHubInfo,
  parseScripts,
  readScriptsCommand,
  stagedDownloadCommand,
  type HubInfo,
} from './downloadCommands'
import { DownloadProgress, isProgressLine, stripAnsi, type FeedResult } from './progress'
import type { SwapStatus } from './types'

export { downloadCommand } from './downloadCommands'

/** No output at all for this long means the node or the hub stalled: fail rather than hang. */
const DEFAULT_IDLE_TIMEOUT_MS = 10 * 60_000
/** Reading a script or a hub path is one short command on a node that answers. */
const LOOKUP_TIMEOUT_MS = 20_000

export interface DownloadsDeps {
  readonly config: Pick<Config, 'llm'>
  readonly nodes: Pick<NodesModule, 'pool' | 'targets'>
  readonly jobs: JobRegistry
  readonly swap: SwapStatus
  readonly logger: Logger
  /** Longest silence from the script before the job fails (default 10 minutes). */
  readonly idleTimeoutMs?: number
  /** Times a phase when the tools print no clock of their own (default: the system clock). */
  readonly clock?: Clock
}

export interface DownloadRequest {
  repo: string
  mode?: RunMode
  target?: DownloadTarget
}

/** What a finished download reports as the job's result (the result card lists `nodes`). */
export interface DownloadResult {
  repo: string
  target: DownloadTarget
  nodes: NodeName[]
}

/** Solo means node1, cluster means both nodes (spec 4.3 rule 2); an explicit target wins. */
export function resolveTarget(req: DownloadRequest): DownloadTarget {
  return req.target ?? (req.mode === 'cluster' ? 'both' : 'node1')
}

/** The nodes a target names: both is node1 and node2, all every configured node, a node itself. */
export function targetNodes(target: DownloadTarget, configured: readonly NodeName[]): NodeName[] {
  if (target === 'both') return ['node1', 'node2']
  if (target === 'all') return [...configured]
  return [target]
}

/** `node1`, `node1 and node2`, `node1, node2 and node3`. */
function listed(nodes: readonly NodeName[]): string {
  return nodes.length < 3 ? nodes.join(' and ') : `${nodes.slice(0, -1).join(', ')} and ${nodes[nodes.length - 1]}`
}

/** A peer of node1 a download copies to. */
interface Peer {
  name: NodeName
  target: SshTarget
}

/** A download, decided before it starts. node1 is always needed: it holds the launcher. */
interface DownloadPlan {
  repo: string
  target: DownloadTarget
  nodes: NodeName[]
  node1: SshTarget
  /** With node1 among the nodes: the others, copied to from node1. */
  peers: Peer[]
  /** Without node1: the one node that runs node1's script itself. */
  alone: Peer | null
}

/** One long remote run: where, the command, and the program its failures name. */
interface Step {
  on: NodeName
  target: SshTarget
  command: string
  what: string
  /** Added when SSH itself failed (exit status 255): what must hold for the step to work. */
  sshHint?: string
}

/**
 * Downloads of model weights with the launcher's hf-download.sh, one at a time, as 'download' jobs.
 * node1 runs the script from its checkout; a single other node (node2, node3…), which needs no
 * checkout, runs the same script read from node1's. For node1 and peers the script's own copy (`-c`,
 * each peer's SSH host) is used when it lands exactly where every peer keeps its hub cache (one user,
 * port 22, the same hub path); otherwise Tandem copies to each peer with its own settings, so the
 * weights are where disk status looks.
 */
export class Downloads {
  constructor(private readonly deps: DownloadsDeps) {}

  start(req: DownloadRequest): { job_id: string } {
    // The edge parses input already; callers inside the daemon get the same guard before any SSH.
    if (!ModelRepo.safeParse(req.repo).success)
      throw new ApiError('bad_input', 'repo: a model repo like org/name', { param: 'repo' })
    if (this.deps.swap.busy()) throw new ApiError('conflict', 'a model swap is in progress; download after it')
    const plan = this.plan(req.repo, resolveTarget(req))
    const record = this.deps.jobs.start('download', `Download ${req.repo} to ${listed(plan.nodes)}`, (job) =>
      this.run(job, plan),
    )
    this.deps.logger.info('download started', { job: record.id, repo: req.repo, target: plan.target })
    return { job_id: record.id }
  }

  /** The nodes and who does what; refuses a target that is not configured before anything runs. */
  private plan(repo: string, target: DownloadTarget): DownloadPlan {
    const targets = this.deps.nodes.targets
    const configured = nodeNames({ nodes: targets }).filter((n) => targets[n] !== null && targets[n] !== undefined)
    if (target !== 'node1' && target !== 'node2' && target !== 'both') {
      const known = z.enum(['all', ...configured]).safeParse(target)
      if (!known.success)
        throw new ApiError(
          'bad_input',
          `target: ${target} is not configured; the configured nodes are ${configured.join(', ')} (or both, all)`,
          { param: 'target' },
        )
    }
    const { node1, node2 } = targets
    if ((target === 'node2' || target === 'both') && !node2)
      throw new ApiError(
        'conflict',
        target === 'both' ? 'node2 is not configured: cannot copy to both nodes' : 'node2 is not configured',
      )
    if (!node1)
      throw new ApiError(
        'conflict',
        target === 'node1' || target === 'both' || target === 'all'
          ? 'node1 is not configured'
          : `node1 is not configured: ${target} runs the launcher's hf-download.sh from node1's checkout`,
      )
    const nodes = targetNodes(target, configured)
    const peerOf = (name: NodeName): Peer => ({ name, target: targets[name] as SshTarget })
    const withNode1 = nodes.includes('node1')
    return {
      repo,
      target,
      nodes,
      node1,
      peers: withNode1 ? nodes.filter((n) => n !== 'node1').map(peerOf) : [],
      alone: withNode1 ? null : peerOf(nodes[0] as NodeName),
    }
  }

  private async run(job: JobControl, plan: DownloadPlan): Promise<DownloadResult> {
    const clock = this.deps.clock ?? systemClock
    const progress = new DownloadProgress({ now: () => clock.now(), copies: Math.max(1, plan.peers.length) })
    const sink = new ProgressSink(job, progress)
    job.phase(sink.progress.phase)
    const dir = this.deps.config.llm.launcherDir
    try {
      if (plan.alone !== null) await this.onOther(job, sink, plan, plan.alone)
      else if (plan.peers.length > 0) await this.withPeers(job, sink, plan)
      else {
        const command = downloadCommand(dir, plan.repo, null)
        await this.step(job, sink, { on: 'node1', target: plan.node1, command, what: 'hf-download.sh' })
      }
      sink.finish()
    } catch (err) {
      sink.flush()
      throw err
    }
    return { repo: plan.repo, target: plan.target, nodes: plan.nodes }
  }

  /** A node other than node1 has no launcher to rely on: node1's script (and what it sources) is staged there and run. */
  private async onOther(job: JobControl, sink: ProgressSink, plan: DownloadPlan, on: Peer): Promise<void> {
    const dir = this.deps.config.llm.launcherDir
    const read = await this.lookup(
      job,
      'node1',
      plan.node1,
      readScriptsCommand(dir),
      "read the launcher's hf-download.sh",
    )
    const command = stagedDownloadCommand(parseScripts(read), plan.repo)
    await this.step(job, sink, { on: on.name, target: on.target, command, what: 'hf-download.sh' })
  }

  /** node1 downloads; the script copies to every peer when its copy lands where each keeps its cache, else Tandem does. */
  private async withPeers(job: JobControl, sink: ProgressSink, plan: DownloadPlan): Promise<void> {
    const dir = this.deps.config.llm.launcherDir
    const what = 'read where the hub cache is'
    const [from, ...hubs] = await Promise.all([
      this.lookup(job, 'node1', plan.node1, hubInfoCommand(dir), what).then((o) => parseHubInfo(o, 'node1')),
      ...plan.peers.map((p) =>
        this.lookup(job, p.name, p.target, hubInfoCommand(null), what).then((o) => parseHubInfo(o, p.name)),
      ),
    ])
    const why = scriptCopyRefusal(plan.peers, from as HubInfo, hubs)
    if (why === null) {
      const command = downloadCommand(
        dir,
        plan.repo,
        plan.peers.map((p) => p.target),
      )
      await this.step(job, sink, { on: 'node1', target: plan.node1, command, what: 'hf-download.sh' })
      return
    }
    const only = plan.peers.length === 1 ? (plan.peers[0] as Peer).name : null
    sink.note(
      only !== null
        ? `Tandem copies to ${only} itself, with ${only}'s user, port and hub path: ${why}.`
        : `Tandem copies to ${listed(plan.peers.map((p) => p.name))} itself, each with its own user, port and hub path: ${why}.`,
    )
    const download = downloadCommand(dir, plan.repo, null)
    await this.step(job, sink, { on: 'node1', target: plan.node1, command: download, what: 'hf-download.sh' })
    for (const [i, p] of plan.peers.entries()) {
      const to = hubs[i] as HubInfo
      const peer = p.target
      sink.startCopy(`Copying model '${plan.repo}' to ${peer.user}@${peer.host}:${to.hub}/ (SSH port ${peer.port})...`)
      const command = copyCommand(plan.repo, (from as HubInfo).hub, peer, to.hub, p.name)
      const sshHint = `node1 copies over SSH: ${peer.user}@${peer.host} port ${peer.port} must accept node1's key`
      await this.step(job, sink, { on: 'node1', target: plan.node1, command, what: 'rsync', sshHint })
    }
  }

  /** A short command whose output the download needs; its failure fails the job with what was being read. */
  private async lookup(
    job: JobControl,
    on: NodeName,
    target: SshTarget,
    command: string,
    what: string,
  ): Promise<string> {
    try {
      const res = await this.deps.nodes.pool.exec(target, command, { timeoutMs: LOOKUP_TIMEOUT_MS, signal: job.signal })
      if (res.code === 0) return res.stdout
      throw new Error(`could not ${what} on ${on}: ${lastMeaningful(res.stderr) ?? `exit status ${String(res.code)}`}`)
    } catch (err) {
      if (err instanceof SshError && err.kind !== 'cancelled')
        throw new Error(`could not ${what} on ${on}: ${err.message}`, { cause: err })
      throw err
    }
  }

  /** Runs a long script in its own process group, its output feeding the job; fails with the phase and the script's last words. */
  private async step(job: JobControl, sink: ProgressSink, s: Step): Promise<void> {
    const idleMs = this.deps.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS
    try {
      const res = await runInProcessGroup(this.deps.nodes.pool, s.target, s.command, {
        signal: job.signal,
        idleMs,
        onLine: sink.line,
        logger: this.deps.logger,
        what: `${s.what} (download)`,
      })
      if (res.code !== 0) throw failure(s, res, sink.progress.phase)
    } catch (err) {
      const phase = sink.progress.phase
      if (err instanceof RemoteIdle)
        throw new Error(`no output from ${s.on} for ${Math.round(idleMs / 1000)} s during "${phase}"; stopped`, {
          cause: err,
        })
      if (err instanceof SshError && err.kind !== 'cancelled')
        throw new Error(`${s.on} became unreachable during "${phase}": ${err.message}`, { cause: err })
      throw err
    }
  }
}

/**
 * Why the launcher's own copy cannot serve these peers (null when it can): its `-c` copies to each
 * peer's SSH host as one user (`-u`), port 22, into node1's hub path, so every peer must take that.
 */
function scriptCopyRefusal(peers: readonly Peer[], from: HubInfo, hubs: readonly HubInfo[]): string | null {
  for (const [i, p] of peers.entries()) {
    const how = copyPlan(p.target, from, hubs[i] as HubInfo, p.name)
    if (how.by === 'tandem') return how.why
  }
  const users = [...new Set(peers.map((p) => p.target.user))]
  if (users.length > 1) return `the peers log in as different users (${users.join(', ')}); the launcher's copy uses one`
  return null
}

/**
 * Passes the parser's results to the job: log lines, phase changes, and figures when they move
 * visibly (a tenth of a percent, a total, a rate appearing), not on every redraw.
 */
class ProgressSink {
  private last: string | null = null

  constructor(
    private readonly job: JobControl,
    readonly progress: DownloadProgress,
  ) {}

  readonly line = (line: string): void => this.apply(this.progress.feed(line))

  /** Tandem's own word in the log, after the bars' last redraws. */
  note(text: string): void {
    this.apply({ phase: false, progress: false, log: [...this.progress.flush(), text] })
  }

  /** Tandem starts the copy itself: the phase changes before rsync prints anything. */
  startCopy(announce: string): void {
    const r = this.progress.startCopy()
    this.apply({ ...r, log: [...r.log, announce] })
  }

  flush(): void {
    for (const l of this.progress.flush()) this.job.log(l)
  }

  /** Every step exited 0: Done, at 100 %, with the last phase's average rate. */
  finish(): void {
    this.flush()
    this.progress.finish()
    this.job.phase(this.progress.phase)
    this.report(true)
  }

  private apply(r: FeedResult): void {
    for (const l of r.log) this.job.log(l)
    if (r.phase) this.job.phase(this.progress.phase)
    if (r.progress) this.report(r.phase)
  }

  private report(force: boolean): void {
    const f = this.progress.figures()
    const key = `${f.percent}|${f.bytes_total}|${f.eta_s === 0}|${f.rate === null}`
    if (!force && key === this.last) return
    this.last = key
    this.job.progress({
      percent: f.percent,
      bytes_done: f.bytes_done,
      bytes_total: f.bytes_total,
      rate: f.rate,
      eta_s: f.eta_s,
    })
  }
}

/** Why a step that ran to its end failed: the phase, the exit, and the script's (or ssh's) last words. */
function failure(s: Step, res: ExecResult, phase: string): Error {
  if (res.code === null && res.signal === null) return new Error(`${s.on} dropped the connection during "${phase}"`)
  const why = res.code !== null ? `exit status ${res.code}` : `signal ${String(res.signal)}`
  // 255 is ssh's own failure: its complaint says more than rsync's summary after it.
  const ssh = res.code === 255 ? sshComplaint(res.stderr) : null
  const last = ssh ?? lastMeaningful(res.stderr) ?? lastMeaningful(res.stdout)
  const hint = ssh !== null && s.sshHint ? `; ${s.sshHint}` : ''
  return new Error(`${s.what} failed on ${s.on} during "${phase}" (${why})${last ? `: ${last}` : ''}${hint}`)
}

/** ssh's own complaint (unreachable, refused, key not accepted, host key unknown), if it made one. */
function sshComplaint(stderr: string): string | null {
  const line = stderr
    .split(/\r?\n|\r/)
    .map((l) => l.trim())
    .find((l) => /^ssh: |: Permission denied \(|^Host key verification failed/.test(l))
  return line === undefined ? null : line.slice(0, 500)
}

/** The last line of output that is not a progress redraw: what a failure says. */
function lastMeaningful(text: string): string | null {
  const lines = text
    .split(/\r?\n|\r/)
    .map((l) => stripAnsi(l).trim())
    .filter((l) => l !== '' && !isProgressLine(l))
  const last = lines[lines.length - 1]
  return last === undefined ? null : last.slice(0, 500)
}
