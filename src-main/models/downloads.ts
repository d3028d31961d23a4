import type { z } from 'zod'
import type { Config } from '../config/load'
import { ApiError } from '../contract/errors'
import type { DownloadTarget, RunMode } from '../contract/models'
import { ModelRepo, type NodeName } from '../contract/schemas'
import type { Logger } from '../core/logger'
import type { JobControl, JobRegistry } from '../jobs/registry'
import type { NodesModule } from '../nodes/module'
import { SshError, type SshTarget } from '../ssh/pool'
import { inOwnProcessGroup, RemoteIdle, runInProcessGroup } from '../ssh/processGroup'
import { remoteDir, shq } from '../ssh/quote'
import { DownloadProgress, stripAnsi, type DownloadFigures } from './progress'
import type { SwapStatus } from './types'

/** No output at all for this long means the node or the hub stalled: fail rather than hang. */
const DEFAULT_IDLE_TIMEOUT_MS = 10 * 60_000

export interface DownloadsDeps {
  readonly config: Pick<Config, 'llm'>
  readonly nodes: Pick<NodesModule, 'pool' | 'targets'>
  readonly jobs: JobRegistry
  readonly swap: SwapStatus
  readonly logger: Logger
  /** Longest silence from the script before the job fails (default 10 minutes). */
  readonly idleTimeoutMs?: number
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

/**
 * The remote command: the launcher's script started in its own process group (so cancel can stop
 * it and everything it spawned — the hub CLI, rsync), its group id announced, then waited for.
 * Every value is quoted; the launcher directory is a `$HOME` path or a single-quoted absolute one.
 */
export function downloadCommand(launcherDir: string, repo: string, copyTo: SshTarget | null): string {
  const dir = remoteDir(launcherDir)
  const args = [repo]
  // The script's -c takes host names until the next flag, so the repo goes first.
  if (copyTo) args.push('-c', copyTo.host, '-u', copyTo.user, '--copy-parallel')
  return [
    `cd ${dir} || exit 127`,
    `[ -x ./hf-download.sh ] || { echo 'hf-download.sh not found in the launcher checkout (LAUNCHER_DIR)' >&2; exit 127; }`,
    ...inOwnProcessGroup(`./hf-download.sh ${args.map(shq).join(' ')}`),
  ].join('\n')
}

/** Downloads of model weights with the launcher's hf-download.sh, one at a time, as 'download' jobs. */
export class Downloads {
  constructor(private readonly deps: DownloadsDeps) {}

  start(req: DownloadRequest): { job_id: string } {
    // The edge parses input already; callers inside the daemon get the same guard before any SSH.
    if (!ModelRepo.safeParse(req.repo).success)
      throw new ApiError('bad_input', 'repo: a model repo like org/name', { param: 'repo' })
    if (this.deps.swap.busy()) throw new ApiError('conflict', 'a model swap is in progress; download after it')
    const target = resolveTarget(req)
    const runOn: NodeName = target === 'node2' ? 'node2' : 'node1'
    const host = this.deps.nodes.targets[runOn]
    if (!host) throw new ApiError('conflict', `${runOn} is not configured`)
    const peer = target === 'both' ? this.deps.nodes.targets.node2 : null
    if (target === 'both' && !peer) throw new ApiError('conflict', 'node2 is not configured: cannot copy to both nodes')
    const nodes: NodeName[] = target === 'both' ? ['node1', 'node2'] : [runOn]
    const title = `Download ${req.repo} to ${nodes.join(' and ')}`
    const record = this.deps.jobs.start('download', title, async (job) => {
      await this.run(job, { host, runOn, command: downloadCommand(this.deps.config.llm.launcherDir, req.repo, peer) })
      const result: DownloadResult = { repo: req.repo, target, nodes }
      return result
    })
    this.deps.logger.info('download started', { job: record.id, repo: req.repo, target })
    return { job_id: record.id }
  }

  private async run(job: JobControl, how: { host: SshTarget; runOn: NodeName; command: string }): Promise<void> {
    const progress = new DownloadProgress()
    const reporter = new ProgressReporter(job)
    job.phase(progress.phase)
    const idleMs = this.deps.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS
    const onLine = (line: string): void => {
      const r = progress.feed(line)
      if (r.phase) job.phase(progress.phase)
      if (r.progress) reporter.report(progress.figures(), r.phase)
      if (r.log) job.log(stripAnsi(line))
    }
    try {
      const res = await runInProcessGroup(this.deps.nodes.pool, how.host, how.command, {
        signal: job.signal,
        idleMs,
        onLine,
        logger: this.deps.logger,
        what: 'the download',
      })
      if (res.code === 0) {
        progress.finish()
        reporter.report(progress.figures(), true)
        return
      }
      if (res.code === null && res.signal === null)
        throw new Error(`${how.runOn} dropped the connection during "${progress.phase}"`)
      const why = res.code !== null ? `exit status ${res.code}` : `signal ${String(res.signal)}`
      const last = lastMeaningful(res.stderr) ?? lastMeaningful(res.stdout)
      throw new Error(
        `hf-download.sh failed on ${how.runOn} during "${progress.phase}" (${why})${last ? `: ${last}` : ''}`,
      )
    } catch (err) {
      if (err instanceof RemoteIdle)
        throw new Error(
          `no output from ${how.runOn} for ${Math.round(idleMs / 1000)} s during "${progress.phase}"; stopped`,
          { cause: err },
        )
      if (err instanceof SshError && err.kind !== 'cancelled')
        throw new Error(`${how.runOn} became unreachable during "${progress.phase}": ${err.message}`, { cause: err })
      throw err
    }
  }
}

/** Passes figures to the job when they move visibly (a tenth of a percent), not on every redraw. */
class ProgressReporter {
  private last: string | null = null

  constructor(private readonly job: JobControl) {}

  report(f: DownloadFigures, force: boolean): void {
    const key = `${f.percent}|${f.bytes_total}|${f.eta_s === 0}`
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

function lastMeaningful(text: string): string | null {
  const lines = text
    .split(/\r?\n|\r/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !/^\S.*:\s*\d{1,3}%\|/.test(l))
  const last = lines[lines.length - 1]
  return last === undefined ? null : last.slice(0, 500)
}
