import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'

/** While a dashboard watches the event stream, hardware is probed this often (services every other time). */
export const LIVE_PROBE_MS = 8000

export type ProbeScope = 'hardware' | 'all'

export interface ClusterMonitorDeps {
  clock: Clock
  logger: Logger
  /** Seconds between background probes of everything; 0 = only while watched. */
  intervalS: number
  /** True while someone follows the event stream. */
  watching(): boolean
  probe(scope: ProbeScope): Promise<unknown>
}

/**
 * Background probes of the nodes' hardware and the services' status: every `intervalS` to keep the connectivity history going while no one looks,
 * and every 8 s while a dashboard follows the event stream, so its view stays live without
 * polling. One probe at a time; a tick that finds one running is skipped.
 */
export class ClusterMonitor {
  private timer: ReturnType<typeof setInterval> | null = null
  private running: Promise<void> | null = null
  private lastAll: number
  private liveTicks = 0

  constructor(private readonly deps: ClusterMonitorDeps) {
    this.lastAll = deps.clock.now()
  }

  /** What is due now, if anything. */
  due(): ProbeScope | null {
    const { clock, intervalS } = this.deps
    if (intervalS > 0 && clock.now() - this.lastAll >= intervalS * 1000) return 'all'
    if (!this.deps.watching()) return null
    return this.liveTicks % 2 === 0 ? 'all' : 'hardware'
  }

  /** Runs what is due; resolves when that probe has finished. */
  tick(): Promise<void> {
    if (this.running) return this.running
    const scope = this.due()
    if (scope === null) return Promise.resolve()
    if (this.deps.watching()) this.liveTicks += 1
    if (scope === 'all') this.lastAll = this.deps.clock.now()
    this.running = this.deps
      .probe(scope)
      .then(
        () => undefined,
        (err: unknown) => this.deps.logger.warn('background probe failed', { error: err }),
      )
      .finally(() => (this.running = null))
    return this.running
  }

  start(): void {
    const background = this.deps.intervalS > 0 ? this.deps.intervalS * 1000 : Infinity
    this.timer = setInterval(() => void this.tick(), Math.min(LIVE_PROBE_MS, background))
    this.timer.unref()
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    await this.running
  }
}
