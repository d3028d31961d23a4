import type { EngineLoad, EngineLoadReading, EngineLoadView } from '../contract/placements'
import type { NodeName } from '../contract/schemas'
import { HttpBodyTooLarge, httpCall } from '../lib/httpClient'
import type { Logger } from '../lib/logger'
import { parsePromTextInTurns, type PromFamily } from '../lib/promText'
import { counterGrowth, KEPT_FAMILIES, pageFigures, windowMedian, type PageFigures } from './engineReadings'

/**
 * Each placement engine's own /metrics, read on a timer of its own (ENGINE_METRICS_INTERVAL_S):
 * never on a request's path, through the daemon's own HTTP agent (not the gateway's upstream pools),
 * each read bounded in time and size, and an engine that fails read less often until it answers.
 * What it read goes to /metrics (federated by the metrics module), to the dashboard
 * (listEngineLoad) and to whoever must know whether an engine is busy (`busy`).
 */

/** A placement whose engine is read: its id, head, the model label and the engine's origin. */
export interface EngineTarget {
  readonly placement: string
  readonly node: NodeName
  readonly model: string
  readonly baseUrl: string
}

export interface EngineMetricsDeps {
  readonly targets: () => readonly EngineTarget[]
  readonly now: () => number
  readonly logger: Logger
  /** Between rounds; 0: off. */
  readonly intervalMs: number
  /** Keep every family the engines send, not only KEPT_FAMILIES. */
  readonly keepAll: boolean
  readonly timeoutMs?: number
  readonly maxBytes?: number
  readonly maxSeries?: number
}

/** One read's limit in time. */
export const SCRAPE_TIMEOUT_MS = 5_000
/** A page over this is refused (vLLM's is about 60 KB with one rank). */
export const SCRAPE_MAX_BYTES = 4 * 1024 * 1024
const SCRAPE_MAX_SERIES = 50_000
/** An engine that keeps failing is read at most this far apart. */
const MAX_BACKOFF_MS = 5 * 60_000
/** Lines parsed in one turn of the event loop: a request arriving meanwhile waits for one turn at most. */
const PARSE_TURN_LINES = 100
/** Readings kept per placement: ten minutes at the default 15 s. */
export const HISTORY_LENGTH = 40

interface Reading {
  readonly at: number
  readonly figures: PageFigures
}

interface EngineState {
  target: EngineTarget
  families: readonly PromFamily[] | null
  error: string | null
  failures: number
  nextAt: number
  scrapeSeconds: number | null
  last: Reading | null
  current: EngineLoadReading | null
  history: EngineLoadReading[]
}

/** The text of the page one engine serves. */
async function fetchPage(target: EngineTarget, timeoutMs: number, maxBytes: number, stop: AbortSignal) {
  const res = await httpCall(`${target.baseUrl}/metrics`, {
    headers: { accept: 'text/plain;version=0.0.4' },
    signal: AbortSignal.any([AbortSignal.timeout(timeoutMs), stop]),
  })
  if (!res.ok) {
    res.discard()
    throw new Error(`the engine answered ${res.status} for /metrics`)
  }
  return res.text(maxBytes)
}

function describe(err: unknown, timeoutMs: number): string {
  if (err instanceof HttpBodyTooLarge) return `its /metrics page is over ${err.limit} bytes`
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError'))
    return `its /metrics did not finish within ${timeoutMs / 1000} s`
  return err instanceof Error ? err.message : String(err)
}

export class EngineMetrics {
  private readonly engines = new Map<string, EngineState>()
  private timer: NodeJS.Timeout | null = null
  /** Aborted by stop: a read in progress ends at once rather than at its timeout. */
  private stopping = new AbortController()
  private round: Promise<void> | null = null
  private readonly kept: ReadonlySet<string> = new Set(KEPT_FAMILIES)
  /** Pages are parsed one at a time, PARSE_TURN_LINES a turn: a request waits at most one turn. */
  private parsing: Promise<unknown> = Promise.resolve()

  constructor(private readonly deps: EngineMetricsDeps) {}

  get intervalMs(): number {
    return this.deps.intervalMs
  }

  start(): void {
    if (this.deps.intervalMs <= 0 || this.timer !== null) return
    this.stopping = new AbortController()
    this.timer = setInterval(() => void this.scrape(), this.deps.intervalMs)
    this.timer.unref()
    void this.scrape()
  }

  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer)
    this.timer = null
    this.stopping.abort()
    await this.round
  }

  /** One round over every placement whose engine is due (a round in progress is joined). */
  scrape(): Promise<void> {
    this.round ??= this.scrapeDue().finally(() => (this.round = null))
    return this.round
  }

  /** The engines' pages as of now: a placement gone since the last round is gone here too. */
  pages(): {
    placement: string
    node: string
    model: string
    up: boolean
    scrapeSeconds: number | null
    families: readonly PromFamily[]
  }[] {
    return this.live().map((s) => ({
      placement: s.target.placement,
      node: s.target.node,
      model: s.target.model,
      up: s.families !== null,
      scrapeSeconds: s.scrapeSeconds,
      families: s.families ?? [],
    }))
  }

  /** Whether the placement's engine has requests running or waiting at its last good reading. */
  busy(placement: string): boolean {
    const s = this.live().find((e) => e.target.placement === placement)
    const r = s?.families === null ? null : s?.current
    return r != null && (r.running ?? 0) + (r.waiting ?? 0) > 0
  }

  view(): EngineLoadView {
    return {
      interval_s: this.deps.intervalMs / 1000,
      placements: this.live().map((s) => this.loadOf(s)),
    }
  }

  private loadOf(s: EngineState): EngineLoad {
    const up = s.families !== null
    const reading = up && s.current !== null ? s.current : { ...NO_READING, at: s.last?.at ?? 0 }
    return {
      ...reading,
      placement: s.target.placement,
      node: s.target.node,
      model: s.target.model,
      state: s.error !== null ? 'failing' : up ? 'ok' : 'waiting',
      error: s.error,
      prefix_hit_pct: up ? hitPct(s.last?.figures ?? null) : null,
      history: [...s.history],
    }
  }

  /** The states of the placements that exist now, in the targets' order. */
  private live(): EngineState[] {
    const out: EngineState[] = []
    const targets = this.deps.targets()
    this.forget(targets)
    for (const t of targets) {
      const s = this.engines.get(t.placement)
      if (s !== undefined && sameEngine(s.target, t)) out.push(s)
    }
    return out
  }

  /** A placement gone is forgotten, history and all. */
  private forget(targets: readonly EngineTarget[]): void {
    if (this.engines.size === 0) return
    const ids = new Set(targets.map((t) => t.placement))
    for (const id of [...this.engines.keys()]) if (!ids.has(id)) this.engines.delete(id)
  }

  private async scrapeDue(): Promise<void> {
    const targets = this.deps.targets()
    this.forget(targets)
    const now = this.deps.now()
    const due: EngineState[] = []
    for (const t of targets) {
      let s = this.engines.get(t.placement)
      // Another engine under the same id (a swap on node1): its counters start again.
      if (s === undefined || !sameEngine(s.target, t)) {
        s = {
          target: t,
          families: null,
          error: null,
          failures: 0,
          nextAt: 0,
          scrapeSeconds: null,
          last: null,
          current: null,
          history: [],
        }
        this.engines.set(t.placement, s)
      }
      if (s.nextAt <= now) due.push(s)
    }
    await Promise.all(due.map((s) => this.scrapeOne(s)))
  }

  private async scrapeOne(s: EngineState): Promise<void> {
    const timeoutMs = this.deps.timeoutMs ?? SCRAPE_TIMEOUT_MS
    const started = this.deps.now()
    const t0 = performance.now()
    try {
      const text = await fetchPage(s.target, timeoutMs, this.deps.maxBytes ?? SCRAPE_MAX_BYTES, this.stopping.signal)
      const limits = { maxSamples: this.deps.maxSeries ?? SCRAPE_MAX_SERIES }
      const parsed = this.parsing.then(() => parsePromTextInTurns(text, limits, PARSE_TURN_LINES))
      this.parsing = parsed.catch(() => undefined)
      const families = await parsed
      s.scrapeSeconds = (performance.now() - t0) / 1000
      this.took(s, families, started)
    } catch (err) {
      s.scrapeSeconds = (performance.now() - t0) / 1000
      const error = describe(err, timeoutMs)
      if (s.error !== error)
        this.deps.logger.warn('could not read an engine’s metrics', { placement: s.target.placement, error })
      // Stale series disappear: nothing of this engine is exposed until it answers again.
      s.families = null
      s.error = error
      s.failures += 1
      const backoff = Math.min(this.deps.intervalMs * 2 ** (s.failures - 1), MAX_BACKOFF_MS)
      s.nextAt = started + backoff
    }
  }

  private took(s: EngineState, families: readonly PromFamily[], at: number): void {
    const figures = pageFigures(families)
    const before = s.last
    const seconds = before === null ? 0 : (at - before.at) / 1000
    const grown = counterGrowth(before?.figures.generationTokens ?? null, figures.generationTokens)
    const reading: EngineLoadReading = {
      at,
      running: figures.running,
      waiting: figures.waiting,
      kv_cache_pct: figures.kvCache === null ? null : figures.kvCache * 100,
      tokens_per_s: grown !== null && seconds > 0 ? grown / seconds : null,
      ttft_p50_s: before === null ? null : windowMedian(before.figures.ttft, figures.ttft),
    }
    s.families = this.deps.keepAll ? families : families.filter((f) => this.kept.has(f.name))
    s.error = null
    s.failures = 0
    s.nextAt = 0
    s.last = { at, figures }
    s.current = reading
    s.history.push(reading)
    if (s.history.length > HISTORY_LENGTH) s.history.splice(0, s.history.length - HISTORY_LENGTH)
  }
}

const NO_READING: EngineLoadReading = {
  at: 0,
  running: null,
  waiting: null,
  kv_cache_pct: null,
  tokens_per_s: null,
  ttft_p50_s: null,
}

/** Prefix-cache hits over queries since the engine started, 0 to 100. */
function hitPct(f: PageFigures | null): number | null {
  if (f === null || f.prefixHits === null || f.prefixQueries === null || f.prefixQueries <= 0) return null
  return (100 * f.prefixHits) / f.prefixQueries
}

function sameEngine(a: EngineTarget, b: EngineTarget): boolean {
  return a.baseUrl === b.baseUrl && a.model === b.model && a.node === b.node
}
