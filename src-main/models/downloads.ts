import type { z } from 'zod'
import type { Config } from '../config/load'
import { ApiError } from '../contract/errors'
import type { DownloadTarget, RunMode } from '../contract/models'
import { ModelRepo, type NodeName } from '../contract/schemas'
import { systemClock, type Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import type { JobControl, JobRegistry } from '../jobs/registry'
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
  target?: z.infer<typeof DownloadTarget>
}

/** What a finished download reports as the job's result. */
export interface DownloadResult {
  repo: string
  target: z.infer<typeof DownloadTarget>
  nodes: NodeName[]
}

/** Solo means node1, cluster means both nodes (spec 4.3 rule 2); an explicit target wins. */
export function resolveTarget(req: DownloadRequest): z.infer<typeof DownloadTarget> {
  return req.target ?? (req.mode === 'cluster' ? 'both' : 'node1')
}

/** A download, decided before it starts. node1 is always needed: it holds the launcher. */
interface DownloadPlan {
  repo: string
  target: z.infer<typeof DownloadTarget>
  nodes: NodeName[]
  node1: SshTarget
  node2: SshTarget | null
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
 * node1 runs the script from its checkout; node2, which has no checkout, runs the same script read
 * from node1's. For both nodes the script's own copy is used when it lands exactly where node2 keeps
 * its hub cache (node2's user, port 22, the same hub path); otherwise Tandem copies with node2's
 * settings, so the weights are where disk status looks.
 */
export class Downloads {
  constructor(private readonly deps: DownloadsDeps) {}

  start(req: DownloadRequest): { job_id: string } {
    // The edge parses input already; callers inside the daemon get the same guard before any SSH.
    if (!ModelRepo.safeParse(req.repo).success)
      throw new ApiError('bad_input', 'repo: a model repo like org/name', { param: 'repo' })
    if (this.deps.swap.busy()) throw new ApiError('conflict', 'a model swap is in progress; download after it')
    const target = resolveTarget(req)
    const { node1, node2 } = this.deps.nodes.targets
    if (target !== 'node1' && !node2)
      throw new ApiError(
        'conflict',
        target === 'both' ? 'node2 is not configured: cannot copy to both nodes' : 'node2 is not configured',
      )
    if (!node1)
      throw new ApiError(
        'conflict',
        target === 'node2'
          ? "node1 is not configured: node2 runs the launcher's hf-download.sh from node1's checkout"
          : 'node1 is not configured',
      )
    const nodes: NodeName[] = target === 'both' ? ['node1', 'node2'] : [target]
    const plan: DownloadPlan = { repo: req.repo, target, nodes, node1, node2 }
    const record = this.deps.jobs.start('download', `Download ${req.repo} to ${nodes.join(' and ')}`, (job) =>
      this.run(job, plan),
    )
    this.deps.logger.info('download started', { job: record.id, repo: req.repo, target })
    return { job_id: record.id }
  }

  private async run(job: JobControl, plan: DownloadPlan): Promise<DownloadResult> {
    const clock = this.deps.clock ?? systemClock
    const sink = new ProgressSink(job, new DownloadProgress({ now: () => clock.now() }))
    job.phase(sink.progress.phase)
    const dir = this.deps.config.llm.launcherDir
    try {
      if (plan.target === 'node2') await this.onNode2(job, sink, plan)
      else if (plan.target === 'both') await this.onBoth(job, sink, plan)
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

  /** node2 has no launcher: node1's script (and what it sources) is staged on node2 and run there. */
  private async onNode2(job: JobControl, sink: ProgressSink, plan: DownloadPlan): Promise<void> {
    const dir = this.deps.config.llm.launcherDir
    const read = await this.lookup(
      job,
      'node1',
      plan.node1,
      readScriptsCommand(dir),
      "read the launcher's hf-download.sh",
    )
    const command = stagedDownloadCommand(parseScripts(read), plan.repo)
    await this.step(job, sink, { on: 'node2', target: plan.node2 as SshTarget, command, what: 'hf-download.sh' })
  }

  private async onBoth(job: JobControl, sink: ProgressSink, plan: DownloadPlan): Promise<void> {
    const dir = this.deps.config.llm.launcherDir
    const peer = plan.node2 as SshTarget
    const what = 'read where the hub cache is'
    const [from, to] = await Promise.all([
      this.lookup(job, 'node1', plan.node1, hubInfoCommand(dir), what).then((o) => parseHubInfo(o, 'node1')),
      this.lookup(job, 'node2', peer, hubInfoCommand(null), what).then((o) => parseHubInfo(o, 'node2')),
    ])
    const how = copyPlan(peer, from, to)
    if (how.by === 'script') {
      const command = downloadCommand(dir, plan.repo, peer)
      await this.step(job, sink, { on: 'node1', target: plan.node1, command, what: 'hf-download.sh' })
      return
    }
    sink.note(`Tandem copies to node2 itself, with node2's user, port and hub path: ${how.why}.`)
    const download = downloadCommand(dir, plan.repo, null)
    await this.step(job, sink, { on: 'node1', target: plan.node1, command: download, what: 'hf-download.sh' })
    sink.startCopy(`Copying model '${plan.repo}' to ${peer.user}@${peer.host}:${to.hub}/ (SSH port ${peer.port})...`)
    const command = copyCommand(plan.repo, from.hub, peer, to.hub)
    const sshHint = `node1 copies over SSH: ${peer.user}@${peer.host} port ${peer.port} must accept node1's key`
    await this.step(job, sink, { on: 'node1', target: plan.node1, command, what: 'rsync', sshHint })
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
