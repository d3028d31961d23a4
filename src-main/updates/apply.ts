import { ApiError } from '../contract/errors'
import type { Logger } from '../lib/logger'
import type { JobControl, JobRegistry } from '../platform/jobs'
import { SshError, type SshPool, type SshTarget } from '../ssh/pool'
import { inOwnProcessGroup, PROCESS_GROUP_MARK, RemoteIdle, runInProcessGroup } from '../ssh/processGroup'
import { shq } from '../ssh/quote'
import type { LauncherCheckout } from './checkout'

export const PHASES = {
  pull: 'Pulling',
  build: 'Building the llm container',
  copy: 'Copying to peer nodes',
} as const

const PULL_TIMEOUT_S = 120
/** A build may compile for a long while without printing; only this much silence fails it. */
const DEFAULT_IDLE_TIMEOUT_MS = 30 * 60_000

/** Lines of build-and-copy.sh that mean the copy to the peers has begun. */
const COPY_START =
  /^(Checking image '.*' on \d+ host|Copying image '.*' to \d+ host|Saving image locally|Loading image into )/
/** BuildKit's `[stage k/n]` and docker pull's layer lines: the build's own measure of progress. */
const BUILD_STEP = /^#\d+ \[(?:[\w.-]+ )?(\d+)\/(\d+)\]/
const PULL_LAYER = /^[0-9a-f]{12}: (Pulling fs layer|Pull complete)$/

export interface ApplyDeps {
  readonly checkout: LauncherCheckout
  readonly pool: Pick<SshPool, 'exec'>
  /** node2, the peer the image is copied to; null when not configured (no copy). */
  readonly peer: SshTarget | null
  readonly jobs: JobRegistry
  readonly logger: Logger
  /** A model swap holds the llm; an update then waits. */
  readonly swapBusy: () => boolean
  /** The checkout's scripts changed (a pull went through): what was learned from them is stale. */
  readonly checkoutChanged: () => void
  readonly idleTimeoutMs?: number
}

/** The remote build: build-and-copy.sh in its own process group, its group id announced, then waited for. */
export function buildCommand(cdLine: string, peer: SshTarget | null): string {
  // -c takes host names until the next flag, so the user flag follows it.
  const args = peer ? ['-c', peer.host, '-u', peer.user] : []
  return [
    cdLine,
    `[ -x ./build-and-copy.sh ] || { echo 'build-and-copy.sh not found in the launcher checkout (LAUNCHER_DIR)' >&2; exit 127; }`,
    ...inOwnProcessGroup(`./build-and-copy.sh ${args.map(shq).join(' ')}`, { mergeStderr: true }),
  ].join('\n')
}

/** `git pull --ff-only` then build-and-copy.sh, as one 'update' job at a time. */
export class UpdateApplier {
  constructor(private readonly deps: ApplyDeps) {}

  async start(): Promise<{ job_id: string }> {
    const running = this.deps.jobs.running('update')
    if (running)
      throw new ApiError('conflict', `an update is already running (${running.record.id}: ${running.record.title})`)
    if (this.deps.swapBusy()) throw new ApiError('conflict', 'a model swap is in progress; update after it')
    const node1 = this.deps.checkout.node1
    if (!node1) throw new ApiError('conflict', 'node1 is not configured: set NODE1_HOST and NODE1_USER')
    const st = await this.deps.checkout.status()
    if (!st.ok && st.branch === null && st.ahead === 0 && st.behind === 0 && !st.dirty)
      throw new ApiError('upstream_unreachable', st.error ?? 'the launcher checkout could not be read')
    if (st.dirty)
      throw new ApiError(
        'conflict',
        `the launcher checkout has local changes (${st.dirty_files.join(', ')}); commit, stash or discard them on node1 first`,
      )
    if (st.ahead > 0 && st.behind > 0)
      throw new ApiError(
        'conflict',
        `the launcher checkout has ${st.ahead} local commit(s) and is ${st.behind} behind: a fast-forward pull is impossible`,
      )
    const title =
      st.behind > 0
        ? `Update the launcher (${st.behind} new commit${st.behind === 1 ? '' : 's'})`
        : 'Rebuild the llm container'
    const record = this.deps.jobs.start('update', title, async (job) => this.run(job, node1))
    this.deps.logger.info('update started', { job: record.id, behind: st.behind })
    return { job_id: record.id }
  }

  private async run(job: JobControl, node1: SshTarget): Promise<{ copied_to: string[] }> {
    job.phase(PHASES.pull)
    job.progress({ percent: 0 })
    job.log('$ git pull --ff-only')
    const pull = await this.deps.pool.exec(
      node1,
      `${this.deps.checkout.cdLine()}\nGIT_TERMINAL_PROMPT=0 timeout ${PULL_TIMEOUT_S} git pull --ff-only 2>&1`,
      { onLine: (l) => job.log(l), signal: job.signal, timeoutMs: (PULL_TIMEOUT_S + 15) * 1000 },
    )
    if (pull.code !== 0) {
      const why = pull.code === 124 ? `timed out after ${PULL_TIMEOUT_S} s` : `exit status ${String(pull.code)}`
      throw new Error(`git pull --ff-only failed (${why})${lastLine(pull.stdout + pull.stderr)}`)
    }
    this.deps.checkoutChanged()
    job.progress({ percent: 5 })
    job.phase(PHASES.build)
    const peer = this.deps.peer
    job.log(`$ ./build-and-copy.sh${peer ? ` -c ${peer.host} -u ${peer.user}` : ''}`)
    await this.build(job, node1, peer)
    job.progress({ percent: 100 })
    return { copied_to: peer ? [peer.host] : [] }
  }

  private async build(job: JobControl, node1: SshTarget, peer: SshTarget | null): Promise<void> {
    let phase: string = PHASES.build
    const figures = { done: 0, total: 0 }
    const idleMs = this.deps.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS
    const onLine = (line: string): void => {
      job.log(line)
      if (phase === PHASES.build && COPY_START.test(line)) {
        phase = PHASES.copy
        job.phase(phase)
        job.progress({ percent: 90 })
        return
      }
      if (phase === PHASES.build) {
        const pct = buildPercent(line, figures)
        if (pct !== null) job.progress({ percent: pct })
      }
    }
    try {
      const res = await runInProcessGroup(this.deps.pool, node1, buildCommand(this.deps.checkout.cdLine(), peer), {
        signal: job.signal,
        idleMs,
        onLine,
        onGroup: (n) => job.log(`build-and-copy.sh runs on node1 as process group ${n}`),
        logger: this.deps.logger,
        what: 'the build',
      })
      if (res.code === 0) return
      if (res.code === null && res.signal === null) throw new Error(`node1 dropped the connection during "${phase}"`)
      const why = res.code !== null ? `exit status ${res.code}` : `signal ${String(res.signal)}`
      throw new Error(`build-and-copy.sh failed during "${phase}" (${why})${lastLine(res.stdout + res.stderr)}`)
    } catch (err) {
      if (err instanceof RemoteIdle)
        throw new Error(`no output from node1 for ${Math.round(idleMs / 60_000)} min during "${phase}"; stopped`, {
          cause: err,
        })
      if (err instanceof SshError && err.kind !== 'cancelled')
        throw new Error(`node1 became unreachable during "${phase}": ${err.message}`, { cause: err })
      throw err
    }
  }
}

/** The build's share (5–90 %) from BuildKit steps or pulled layers; null when the line says nothing. */
function buildPercent(line: string, f: { done: number; total: number }): number | null {
  const step = BUILD_STEP.exec(line)
  if (step) {
    f.done = Number(step[1])
    f.total = Number(step[2])
  } else {
    const layer = PULL_LAYER.exec(line)
    if (!layer) return null
    if (layer[1] === 'Pulling fs layer') f.total++
    else f.done++
  }
  if (f.total === 0) return null
  return Math.round(5 + (85 * Math.min(f.done, f.total)) / f.total)
}

function lastLine(text: string): string {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== '' && !l.startsWith(PROCESS_GROUP_MARK))
  const last = lines[lines.length - 1]
  return last === undefined ? '' : `: ${last.slice(0, 500)}`
}
