import { SWAP_PHASE_TITLES } from '../contract/models'
import type { Placement } from '../contract/placements'
import { servedName } from './launch'
import { matchesJob, swapUnavailable, touches, type InFlight, type Outcome, type PlacementBook } from './placementBook'
import { answers, node1Route, noCopyAnswers, routeOf, serves, type EngineView } from './placementRoutes'
import type { CatalogEntry, ModelRouter, PlacementRoute } from './types'

/**
 * The gateway's admission gate (ModelRouter): routes by model name to the copies whose engines
 * answer, holds a request while a placement job touches its model, and starts the spec's swap on
 * demand for a catalog model nothing serves.
 */
export class PlacementRouter implements ModelRouter {
  private holding = 0

  constructor(
    private readonly book: PlacementBook,
    private readonly view: EngineView,
    /** The spec's swap, started on demand. */
    private readonly begin: (key: string) => Promise<{ job_id: string }>,
  ) {}

  /** Requests waiting at the gateway for a placement job. */
  get held(): number {
    return this.holding
  }

  routeNow(model: string | null): readonly PlacementRoute[] | null {
    const s = this.book.changing
    if (s !== null && touches(s, model)) return null
    if (this.wouldStartOnDemand(model)) return null
    const copies = this.copies(model)
    const ready = this.answering(copies)
    if (ready.length > 0) return ready
    // A miss is looked at again before it goes on (admit); within a second of the last look it goes on at once.
    if (this.book.watch.due()) return null
    try {
      return this.unready(model, copies)
    } catch {
      return null
    }
  }

  placed(): readonly PlacementRoute[] {
    return this.answering(this.book.all())
  }

  relook(): void {
    void this.book.watch.refresh()
  }

  /**
   * Where a request for `model` may go (ModelRouter.admit): waits while a job touches that model,
   * starts a placement on demand when allowed, looks at the engines again when nothing answers for
   * it, then answers with the copies that answer, node1's llm, or 503.
   */
  async admit(model: string | null, signal: AbortSignal): Promise<readonly PlacementRoute[]> {
    if (this.wouldStartOnDemand(model)) await this.onDemand(model as string)
    const s = this.book.changing
    if (s !== null && touches(s, model)) {
      const result = await this.hold(s, signal)
      if (result === 'down' && s.action === 'place' && matchesJob(s, model))
        throw swapUnavailable(
          `the swap to ${s.entry?.def.key ?? s.id} failed and no model is loaded (the rollback failed too)`,
          60,
        )
    }
    let ready = this.answering(this.copies(model))
    if (ready.length > 0) return ready
    await this.book.watch.refresh()
    if (signal.aborted) throw signal.reason
    const copies = this.copies(model)
    ready = this.answering(copies)
    return ready.length > 0 ? ready : this.unready(model, copies)
  }

  /** The placements serving `model` (null: the one including node1). */
  private copies(model: string | null): Placement[] {
    if (model === null) return this.book.all().filter((p) => p.nodes.includes('node1'))
    const all = this.book.all().filter((p) => serves(p, model, this.view))
    // A served name wins over another engine's alias or catalog key of the same spelling.
    const named = all.filter((p) => p.served === model)
    return named.length > 0 ? named : all
  }

  /** The routes of the copies whose engines answer. */
  private answering(copies: readonly Placement[]): PlacementRoute[] {
    const out: PlacementRoute[] = []
    for (const p of copies) {
      const route = answers(p, this.view) ? routeOf(p, this.view) : null
      if (route !== null) out.push(route)
    }
    return out
  }

  /** No copy answers: node1's llm when the model is not placed or one copy is on node1 (502 if it is down), else 503. */
  private unready(model: string | null, copies: readonly Placement[]): PlacementRoute[] {
    const { deps } = this.book
    if (model === null || copies.length === 0 || copies.some((p) => p.nodes.includes('node1')))
      return [node1Route(this.book.node1Placement(), deps.engineUrl('node1'), deps.llmHint?.() ?? null)]
    throw noCopyAnswers(model, copies)
  }

  private wouldStartOnDemand(model: string | null): boolean {
    if (!this.book.deps.config.models.onDemand || model === null || this.book.changing !== null) return false
    return this.copies(model)[0] === undefined && this.catalogEntry(model) !== undefined
  }

  private catalogEntry(model: string): CatalogEntry | undefined {
    return this.book.deps.catalog.list().find((e) => e.def.key === model || servedName(e) === model)
  }

  /** Starts the spec's swap for a catalog model nothing serves (its fit decides: no confirm). */
  private async onDemand(model: string): Promise<void> {
    const entry = this.catalogEntry(model)
    if (entry === undefined) return
    const { logger, engineBusy, config } = this.book.deps
    // Busy means busy: an engine running or queueing requests (whoever sent them) is not evicted.
    const busy = this.book.all().filter((p) => p.nodes.includes('node1') && engineBusy?.(p.id) === true)
    if (busy.length > 0) {
      const ids = busy.map((p) => p.id).join(', ')
      logger.info('no swap on demand: the engine is busy', { model: entry.def.key, placements: ids })
      throw swapUnavailable(
        `${entry.def.key} is not loaded and the engine it would replace (${ids}) has requests running or waiting; retry later`,
        Math.max(config.engineMetrics.intervalS, 5),
      )
    }
    try {
      const { job_id } = await this.begin(entry.def.key)
      logger.info('swap on demand', { model: entry.def.key, job: job_id })
    } catch (err) {
      // Another request started it meanwhile, or it cannot start: the request goes on as it is.
      logger.info('no swap on demand', { model: entry.def.key, reason: (err as Error).message })
    }
  }

  /** Waits for a job's outcome, up to SWAP_HOLD_S; 503 with Retry-After past it. */
  private async hold(s: InFlight, signal: AbortSignal): Promise<Outcome> {
    const holdMs = this.book.deps.config.models.holdS * 1000
    let timer: NodeJS.Timeout | undefined
    let onAbort: (() => void) | undefined
    this.holding += 1
    try {
      const result = await Promise.race([
        s.outcome,
        new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), holdMs))),
        new Promise<never>((_, reject) => {
          onAbort = () => reject(signal.reason)
          if (signal.aborted) onAbort()
          else signal.addEventListener('abort', onAbort, { once: true })
        }),
      ])
      if (result === 'timeout') {
        const eta = this.book.etaS(s)
        const what = s.entry?.def.key ?? s.id
        throw swapUnavailable(
          `a model swap is in progress (${what}, ${SWAP_PHASE_TITLES[s.phase].toLowerCase()}); retry later`,
          eta !== null && eta > 0 ? eta : 30,
        )
      }
      return result
    } finally {
      this.holding -= 1
      clearTimeout(timer)
      if (onAbort) signal.removeEventListener('abort', onAbort)
    }
  }
}
