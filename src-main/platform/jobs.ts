import { randomBytes } from 'node:crypto'
import type { Clock } from '../lib/clock'
import type { EventPublisher } from './eventBus'
import type { Redactor } from '../lib/logger'
import { ApiError } from '../contract/errors'
import type { JobEvent, JobKind, JobProgress, JobRecord } from '../contract/system'

const MAX_LOG_LINES = 2000
const MAX_EVENTS = 5000
const MAX_FINISHED_JOBS = 50
/** Progress reaches the event bus at most this often per job; phase and state changes always do. */
const PROGRESS_PUBLISH_MS = 1000

/** What a running job's body may do. */
export interface JobControl {
  readonly id: string
  /** Aborted when the operator cancels or the daemon stops. */
  readonly signal: AbortSignal
  phase(name: string): void
  log(line: string): void
  progress(p: Partial<JobProgress>): void
}

type Body = (job: JobControl) => Promise<unknown>

interface JobEntry {
  record: JobRecord
  events: JobEvent[]
  seq: number
  abort: AbortController
  waiters: Set<() => void>
  done: Promise<void>
  publishedAt: number
}

/**
 * Long-running work (downloads, updates, prebuilt installs, swaps): at most one running job per
 * kind, a bounded log, progress, and an event stream that replays what a late viewer missed.
 * A job keeps running when its viewer disconnects.
 */
export class JobRegistry {
  private readonly jobs = new Map<string, JobEntry>()

  constructor(
    private readonly clock: Clock,
    private readonly redactor: Redactor,
    private readonly bus?: EventPublisher,
  ) {}

  /** Starts a job; refuses (409, naming the running job) when one of the same kind is running. */
  start(kind: JobKind, title: string, body: Body): JobRecord {
    const running = this.running(kind)
    if (running)
      throw new ApiError('conflict', `a ${kind} job is already running (${running.record.id}: ${running.record.title})`)
    const id = `${kind}-${randomBytes(6).toString('hex')}`
    const now = this.clock.now()
    let resolveDone!: () => void
    const entry: JobEntry = {
      record: {
        id,
        kind,
        title,
        state: 'running',
        phase: 'Starting',
        started_at: now,
        finished_at: null,
        elapsed_s: 0,
        progress: null,
        log: [],
        result: null,
        error: null,
      },
      events: [],
      seq: 0,
      abort: new AbortController(),
      waiters: new Set(),
      done: new Promise<void>((r) => (resolveDone = r)),
      publishedAt: now,
    }
    this.jobs.set(id, entry)
    this.trim()
    this.publish(entry)
    const control: JobControl = {
      id,
      signal: entry.abort.signal,
      phase: (name) => {
        entry.record.phase = name
        this.emit(entry, { type: 'phase', seq: 0, phase: name })
        this.publish(entry)
      },
      log: (line) => {
        for (const l of line.split(/\r?\n/)) {
          const clean = this.redactor.redact(l)
          entry.record.log.push(clean)
          if (entry.record.log.length > MAX_LOG_LINES)
            entry.record.log.splice(0, entry.record.log.length - MAX_LOG_LINES)
          this.emit(entry, { type: 'log', seq: 0, line: clean })
        }
      },
      progress: (p) => {
        const merged: JobProgress = {
          percent: null,
          bytes_done: null,
          bytes_total: null,
          rate: null,
          eta_s: null,
          ...entry.record.progress,
          ...p,
        }
        entry.record.progress = merged
        this.emit(entry, { type: 'progress', seq: 0, progress: merged })
        if (this.clock.now() - entry.publishedAt >= PROGRESS_PUBLISH_MS) this.publish(entry)
      },
    }
    // Run on the next tick so the caller gets the record before the first event.
    void Promise.resolve()
      .then(() => {
        // Cancelled before it began: do not start the work at all.
        if (entry.abort.signal.aborted) throw entry.abort.signal.reason
        return body(control)
      })
      .then(
        (result) => this.finish(entry, entry.abort.signal.aborted ? 'cancelled' : 'succeeded', null, result ?? null),
        (err: unknown) =>
          this.finish(
            entry,
            entry.abort.signal.aborted ? 'cancelled' : 'failed',
            this.redactor.redact(err instanceof Error ? err.message : String(err)),
            null,
          ),
      )
      .finally(() => resolveDone())
    return this.snapshot(entry)
  }

  /** A job that ended before the daemon restarted, as its owner kept its record: answered like any other. */
  remember(record: JobRecord): void {
    if (this.jobs.has(record.id) || record.state === 'running') return
    const entry: JobEntry = {
      record: { ...record, log: [...record.log] },
      events: [],
      seq: 0,
      abort: new AbortController(),
      waiters: new Set(),
      done: Promise.resolve(),
      publishedAt: record.finished_at ?? record.started_at,
    }
    this.jobs.set(record.id, entry)
    this.trim()
  }

  get(id: string): JobRecord {
    return this.snapshot(this.entry(id))
  }

  list(kind?: JobKind): JobRecord[] {
    return [...this.jobs.values()]
      .filter((e) => kind === undefined || e.record.kind === kind)
      .map((e) => this.snapshot(e))
      .sort((a, b) => b.started_at - a.started_at)
  }

  running(kind: JobKind): JobEntry | undefined {
    return [...this.jobs.values()].find((e) => e.record.kind === kind && e.record.state === 'running')
  }

  isRunning(kind: JobKind): boolean {
    return this.running(kind) !== undefined
  }

  cancel(id: string): JobRecord {
    const entry = this.entry(id)
    if (entry.record.state === 'running') entry.abort.abort(new Error('cancelled by the operator'))
    return this.snapshot(entry)
  }

  /** Resolves when the job has ended (for tests and shutdown). */
  async wait(id: string): Promise<JobRecord> {
    const entry = this.entry(id)
    await entry.done
    return this.snapshot(entry)
  }

  /** Every event after `after` (a seq), then live ones until the job ends or the signal aborts. */
  async *events(id: string, after = 0, signal?: AbortSignal): AsyncGenerator<JobEvent> {
    const entry = this.entry(id)
    let next = after
    for (;;) {
      const pending = entry.events.filter((e) => e.seq > next)
      if (pending.length > 0) {
        for (const ev of pending) {
          next = ev.seq
          yield ev
          if (ev.type === 'end') return
        }
        // More may have arrived while the consumer was busy: look again before waiting.
        continue
      }
      // Ended and its end event was trimmed or already passed: nothing more will come.
      if (entry.record.state !== 'running') return
      if (signal?.aborted) return
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          entry.waiters.delete(wake)
          signal?.removeEventListener('abort', wake)
          resolve()
        }
        entry.waiters.add(wake)
        signal?.addEventListener('abort', wake, { once: true })
      })
    }
  }

  /** Cancels every running job and waits for them (daemon shutdown). */
  async stopAll(): Promise<void> {
    const running = [...this.jobs.values()].filter((e) => e.record.state === 'running')
    for (const e of running) e.abort.abort(new Error('daemon stopping'))
    await Promise.all(running.map((e) => e.done))
  }

  private entry(id: string): JobEntry {
    const e = this.jobs.get(id)
    if (!e) throw new ApiError('not_found', `no job ${id}`)
    return e
  }

  private emit(entry: JobEntry, ev: JobEvent): void {
    entry.seq += 1
    const withSeq = { ...ev, seq: entry.seq } as JobEvent
    entry.events.push(withSeq)
    if (entry.events.length > MAX_EVENTS) entry.events.splice(0, entry.events.length - MAX_EVENTS)
    for (const w of [...entry.waiters]) w()
  }

  private finish(entry: JobEntry, state: JobRecord['state'], error: string | null, result: unknown): void {
    entry.record.state = state
    entry.record.error = error
    entry.record.result = result
    entry.record.finished_at = this.clock.now()
    entry.record.phase = state === 'succeeded' ? 'Done' : state === 'cancelled' ? 'Cancelled' : 'Failed'
    this.emit(entry, { type: 'end', seq: 0, state, error, result })
    this.publish(entry)
  }

  /** The job's state, without its log, on the event bus. */
  private publish(entry: JobEntry): void {
    if (!this.bus) return
    entry.publishedAt = this.clock.now()
    const r = entry.record
    this.bus.publish('job.update', {
      id: r.id,
      kind: r.kind,
      title: r.title,
      state: r.state,
      phase: r.phase,
      started_at: r.started_at,
      finished_at: r.finished_at,
      progress: r.progress ? { ...r.progress } : null,
      error: r.error,
    })
  }

  private snapshot(entry: JobEntry): JobRecord {
    const end = entry.record.finished_at ?? this.clock.now()
    return {
      ...entry.record,
      progress: entry.record.progress ? { ...entry.record.progress } : null,
      log: entry.record.log.slice(-200),
      elapsed_s: Math.max(0, Math.round((end - entry.record.started_at) / 100) / 10),
    }
  }

  private trim(): void {
    const finished = [...this.jobs.values()]
      .filter((e) => e.record.state !== 'running')
      .sort((a, b) => a.record.started_at - b.record.started_at)
    while (finished.length > MAX_FINISHED_JOBS) {
      const old = finished.shift()
      if (old) this.jobs.delete(old.record.id)
    }
  }
}
