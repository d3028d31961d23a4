import type { FitEstimate } from '../contract/models'
import type { Placement, PlacementRecovery } from '../contract/placements'
import type { NodeName } from '../contract/schemas'
import type { Clock } from '../lib/clock'
import { RESTART_LIMITS, restartHold } from '../platform/restartLimits'
import { servedName } from './launch'
import { errorText, type PlacementBook } from './placementBook'
import type { PlacementIntent } from './placementIntent'
import type { PlaceOptions } from './placementPlanner'
import { containerRunning, unverifiedText, verifyStopped } from './placementStop'
import type { CatalogEntry } from './types'

/** Between two rounds when nothing asks for one (a node's reachability change, the start, a job's end do). */
export const RECONCILE_INTERVAL_MS = 30_000

export interface ReconcilerDeps {
  readonly book: PlacementBook
  readonly clock: Clock
  /** Starts a placement job (the planner's `place`): refused with an ApiError before anything stops. */
  readonly place: (key: string, nodes: readonly NodeName[], opts: PlaceOptions) => Promise<{ job_id: string }>
  /** Stops a placement (the planner's `stopPlacement`): how an idle one is unloaded. */
  readonly stop: (id: string) => Promise<{ job_id: string }>
  /** Whether a placement has a request in flight (held or streaming): never unloaded then. */
  readonly isBusy: (placementId: string) => boolean
  /** Off: nothing is relaunched (PLACEMENT_RECOVERY). */
  readonly enabled: () => boolean
  readonly intervalMs?: number
}

/** An intent whose engine is missing, and what it needs per node (the largest goes first). */
interface Missing {
  readonly intent: PlacementIntent
  readonly needBytes: number
  /** The fit estimate the order came from (null: none could be made). */
  readonly fit: FitEstimate | null
}

/**
 * Brings what the operator placed back (docs/placements.md, Recovery): compares each intent with
 * what runs — at start, when a node's reachability changes, after each job and on a slow timer —
 * and relaunches a missing placement when its nodes answer, largest first and never over a
 * node's budget, one job at a time through the same placement job, within the restart limits
 * deep health uses. It also retries stops that could not reach a node and unloads idle placements.
 */
export class PlacementReconciler {
  private readonly status = new Map<string, PlacementRecovery>()
  /** When an intent's container was first seen running without its engine answering (adoption's bound). */
  private readonly loadingSince = new Map<string, number>()
  /** The last request admitted per placement (idle unloading). */
  private readonly usedAt = new Map<string, number>()
  private timer: NodeJS.Timeout | null = null
  private round: Promise<void> | null = null
  private again = false
  private stopped = false
  /** The statuses as last published. */
  private shown = '[]'

  constructor(private readonly deps: ReconcilerDeps) {}

  start(): void {
    this.stopped = false
    this.timer ??= setInterval(() => this.kick(), this.deps.intervalMs ?? RECONCILE_INTERVAL_MS)
    this.timer.unref()
    this.kick()
  }

  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer !== null) clearInterval(this.timer)
    this.timer = null
    await this.round
  }

  /** Asks for a round now (one runs at a time; a request during one runs another after it). */
  kick(): void {
    if (this.stopped) return
    if (this.round !== null) {
      this.again = true
      return
    }
    this.round = this.tick()
      .catch((err: unknown) => this.deps.book.deps.logger.warn('the placement reconciler failed', { error: err }))
      .finally(() => {
        this.round = null
        if (this.again) {
          this.again = false
          this.kick()
        }
      })
  }

  /** Resolves when no round is running (tests, the benchmark). */
  async settled(): Promise<void> {
    while (this.round !== null) await this.round
  }

  /** What the reconciler is doing about a placement, for the views. */
  recoveryOf(id: string): PlacementRecovery | null {
    return this.status.get(id) ?? null
  }

  /** A request was admitted to a placement: its idle time starts over. */
  touch(id: string): void {
    this.usedAt.set(id, this.deps.clock.now())
  }

  /** The operator's Retry: the counters start over and a round runs. */
  retry(id: string): PlacementRecovery | null {
    const intent = this.deps.book.intents.get(id)
    if (intent === undefined) return null
    this.deps.book.intents.put({ ...intent, recovery: { recent: [], last: null, error: null, failed: false } })
    this.status.delete(id)
    this.kick()
    return null
  }

  /** One round: pending stops, idle unloading, then at most one relaunch. */
  async tick(): Promise<void> {
    const { book } = this.deps
    await book.learned
    // A fresh look at every engine first: what answers is not relaunched.
    await book.watch.refresh(true)
    await this.retryStops()
    if (this.jobRunning()) return
    if (await this.unloadIdle()) return
    const missing = await this.missing()
    this.changedIfNeeded()
    if (!this.deps.enabled() || this.jobRunning()) return
    const fits = await this.firstThatFits(missing)
    if (fits !== null) await this.relaunch(fits)
  }

  private jobRunning(): boolean {
    const { book } = this.deps
    const running = (kind: 'download' | 'swap') => book.deps.jobs.list(kind).some((j) => j.state === 'running')
    return book.changing !== null || running('swap') || running('download')
  }

  /** Each stop that could not reach a node, tried again where the node answers now. */
  private async retryStops(): Promise<void> {
    const { book } = this.deps
    for (const pending of book.intents.pendingStops()) {
      if (pending.nodes.every((n) => book.unreachable.has(n))) continue
      const left = await verifyStopped(book, pending.nodes)
      if (left.length === 0) {
        book.intents.removeStop(pending.id)
        const row = book.placedById.get(pending.id)
        if (row !== undefined && row.state === 'lost' && book.intents.get(pending.id) === undefined)
          book.placedById.delete(pending.id)
        book.save()
        book.deps.logger.info('a stop was verified', { placement: pending.id })
        book.changed()
      } else if (unverifiedText(left) !== pending.error)
        book.intents.addStop({ ...pending, nodes: left.map((l) => l.node), error: unverifiedText(left) })
    }
  }

  /** Stops one placement idle past its ttl (none with a request in flight); true when one was stopped. */
  private async unloadIdle(): Promise<boolean> {
    const { book, clock } = this.deps
    const now = clock.now()
    for (const intent of book.intents.list()) {
      if (!('ttl_min' in intent.keep)) continue
      const p = book.placedById.get(intent.id)
      if (p === undefined || p.state !== 'ready' || this.deps.isBusy(intent.id)) continue
      const used = Math.max(this.usedAt.get(intent.id) ?? -Infinity, p.since ?? intent.since)
      if (now - used < intent.keep.ttl_min * 60_000) continue
      book.deps.logger.info('unloading an idle placement', { placement: intent.id, ttl_min: intent.keep.ttl_min })
      await this.deps
        .stop(intent.id)
        .catch((err: unknown) =>
          book.deps.logger.warn('could not unload an idle placement', { placement: intent.id, error: err }),
        )
      return true
    }
    return false
  }

  /** The intents whose engine is not serving, each with its status set; the ones that may be relaunched now. */
  private async missing(): Promise<Missing[]> {
    const out: Missing[] = []
    for (const intent of this.deps.book.intents.list()) {
      const m = await this.judge(intent)
      if (m !== null) out.push(m)
    }
    return out.sort((a, b) => b.needBytes - a.needBytes)
  }

  /** One intent: serving, waiting (with the reason), held by the limits, or to be relaunched (returned). */
  private async judge(intent: PlacementIntent): Promise<Missing | null> {
    const { book } = this.deps
    const p = book.placedById.get(intent.id)
    const entry = book.deps.catalog.list().find((e) => e.def.key === intent.key)
    const served = servedOf(intent, entry)
    if (await this.serves(p, served)) return this.serving(intent)
    this.ensureRow(intent, served)
    if (!this.deps.enabled()) {
      this.status.delete(intent.id)
      return null
    }
    if (entry === undefined) return this.wait(intent, `${intent.key} is no longer in the catalog`)
    const down = intent.nodes.find((n) => book.unreachable.has(n))
    if (down !== undefined) return this.wait(intent, `waiting for ${down} to answer`)
    // Its engine names it at this round's look (the lost row is about to read ready): nothing to bring back.
    if (p?.served === served && book.watch.names(book.deps.engineUrl(p.head))?.includes(served) === true)
      return this.serving(intent)
    if ((await this.stillLoading(intent)) || this.held(intent)) return null
    const fit = await book.deps.estimate(intent.key, intent.nodes).catch(() => null)
    return { intent, fit, needBytes: Math.max(0, ...(fit?.nodes ?? []).map((n) => n.need_bytes ?? 0)) }
  }

  /** Whether a placement row serves `served` now (listed and not lost, its engine not crashed). */
  private async serves(p: Placement | undefined, served: string): Promise<boolean> {
    return p !== undefined && p.served === served && p.state !== 'lost' && !(await this.crashed(p.head))
  }

  /**
   * An engine that crashed on a node that answers: silent at this round's look and its container
   * not running. Its row reads lost and it is brought back like any missing placement.
   */
  private async crashed(head: NodeName): Promise<boolean> {
    const { book } = this.deps
    if (book.unreachable.has(head) || book.watch.names(book.deps.engineUrl(head)) !== null) return false
    if ((await containerRunning(book, head)) !== false) return false
    const p = book.all().find((x) => x.head === head)
    if (p !== undefined && p.state !== 'lost') {
      book.placedById.set(p.id, {
        ...p,
        state: 'lost',
        reason: `the engine on ${head} stopped (its container is not running)`,
      })
      book.changed()
    }
    return true
  }

  /** Serving again: the status clears and the counters stay (a model that keeps crashing still reaches the cap). */
  private serving(intent: PlacementIntent): null {
    this.status.delete(intent.id)
    this.loadingSince.delete(intent.id)
    if (intent.recovery.error !== null)
      this.deps.book.intents.put({ ...intent, recovery: { ...intent.recovery, error: null } })
    return null
  }

  /** A missing placement stays listed (lost, with the reason) so the views show what is being recovered. */
  private ensureRow(intent: PlacementIntent, served: string): void {
    const { book } = this.deps
    if (book.placedById.has(intent.id)) return
    if (book.all().some((p) => p.nodes.some((n) => intent.nodes.includes(n)))) return
    if (book.changing !== null && book.changing.id === intent.id) return
    book.placedById.set(intent.id, {
      id: intent.id,
      key: intent.key,
      served,
      nodes: [...intent.nodes],
      head: intent.nodes[0] as NodeName,
      layout: intent.layout,
      state: 'lost',
      reason: `the engine on ${intent.nodes[0] ?? '?'} does not answer`,
      since: null,
      memory_bytes_per_node: null,
    })
  }

  /**
   * Its container runs on the head but its engine does not answer yet (a load a restart
   * interrupted, or one started by hand): adopted when it answers, waited for up to the load
   * timeout, never killed meanwhile.
   */
  private async stillLoading(intent: PlacementIntent): Promise<boolean> {
    const { book, clock } = this.deps
    const head = intent.nodes[0] as NodeName
    // An engine answering with another model is not loading this one: it is displaced.
    if (book.watch.names(book.deps.engineUrl(head)) !== null) return false
    const running = await containerRunning(book, head)
    if (running !== true) {
      this.loadingSince.delete(intent.id)
      return false
    }
    const now = clock.now()
    const since = this.loadingSince.get(intent.id) ?? now
    this.loadingSince.set(intent.id, since)
    const limitMs = book.deps.config.models.loadTimeoutS * 1000
    if (now - since >= limitMs) return false
    this.wait(
      intent,
      `the container on ${head} runs; waiting for its engine to answer (adopted when it does)`,
      since + limitMs,
    )
    return true
  }

  /** The restart limits (grace, cooldown, cap): true when they hold the intent back, its status set. */
  private held(intent: PlacementIntent): boolean {
    const now = this.deps.clock.now()
    const r = intent.recovery
    const attempt = r.recent.filter((t) => now - t < RESTART_LIMITS.windowMs).length
    if (r.failed) return this.fail(intent, r.error ?? 'the restart limit was reached')
    const c = { recent: [...r.recent], last: r.last }
    const hold = restartHold(c, now, null)
    if (hold === null) return false
    if (hold.hold === 'cap') {
      this.deps.book.intents.put({ ...intent, recovery: { ...r, recent: c.recent, failed: true } })
      return this.fail(intent, r.error ?? hold.detail)
    }
    this.status.set(intent.id, {
      state: 'recovering',
      attempt: attempt + 1,
      of: RESTART_LIMITS.cap,
      next_at: hold.until,
      error: r.error,
      text: `recovering (attempt ${attempt + 1} of ${RESTART_LIMITS.cap}, next at ${clockText(hold.until)})`,
    })
    return true
  }

  private fail(intent: PlacementIntent, error: string): true {
    this.status.set(intent.id, {
      state: 'failed',
      attempt: RESTART_LIMITS.cap,
      of: RESTART_LIMITS.cap,
      next_at: null,
      error,
      text: `failed: ${error}`,
    })
    return true
  }

  private wait(intent: PlacementIntent, why: string, nextAt: number | null = null): null {
    const r = intent.recovery
    const attempt = r.recent.filter((t) => this.deps.clock.now() - t < RESTART_LIMITS.windowMs).length
    this.status.set(intent.id, {
      state: 'waiting',
      attempt,
      of: RESTART_LIMITS.cap,
      next_at: nextAt,
      error: r.error,
      text: `waiting: ${why}`,
    })
    return null
  }

  /** The largest that fits its nodes now; the others wait, with the reason. */
  private async firstThatFits(missing: readonly Missing[]): Promise<PlacementIntent | null> {
    let chosen: PlacementIntent | null = null
    for (const m of missing) {
      if (chosen !== null) {
        this.wait(m.intent, `${chosen.key} on ${chosen.id} is being recovered first (one at a time, largest first)`)
        continue
      }
      const fit = m.fit
      if (fit?.verdict === 'no_fit') {
        const over = fit.nodes.find((n) => n.verdict === 'no_fit')
        const gb = (b: number | null) => (b === null ? '?' : `${(b / 1e9).toFixed(1)} GB`)
        const why =
          over === undefined
            ? 'it does not fit its nodes now'
            : `it does not fit ${over.node} now (needs ${gb(over.need_bytes)} of a ${gb(over.budget_bytes)} budget)`
        this.wait(m.intent, why)
        continue
      }
      chosen = m.intent
    }
    return chosen
  }

  /** One attempt through the placement job; its end asks for the next round. */
  private async relaunch(intent: PlacementIntent): Promise<void> {
    const { book, clock } = this.deps
    const now = clock.now()
    const recent = [...intent.recovery.recent.filter((t) => now - t < RESTART_LIMITS.windowMs), now]
    const counted: PlacementIntent = { ...intent, recovery: { ...intent.recovery, recent, last: now } }
    book.intents.put(counted)
    const row = book.placedById.get(intent.id)
    // Its own lost row is not a placement to displace (nor to roll back to).
    if (row !== undefined && row.state === 'lost') book.placedById.delete(intent.id)
    book.deps.logger.info('recovering a placement', { placement: intent.id, model: intent.key, attempt: recent.length })
    let jobId: string
    try {
      jobId = (await this.deps.place(intent.key, intent.nodes, { displace: true, origin: 'recovery' })).job_id
    } catch (err) {
      // Refused before anything stopped: not an attempt.
      if (row !== undefined && !book.placedById.has(intent.id)) book.placedById.set(intent.id, row)
      book.intents.put(intent)
      this.wait(intent, errorText(err))
      return
    }
    this.status.set(intent.id, {
      state: 'recovering',
      attempt: recent.length,
      of: RESTART_LIMITS.cap,
      next_at: null,
      error: intent.recovery.error,
      text: `recovering (attempt ${recent.length} of ${RESTART_LIMITS.cap})`,
    })
    book.changed()
    const job = await book.deps.jobs.wait(jobId)
    const after = book.intents.get(intent.id)
    const attempt = `attempt ${recent.length} of ${RESTART_LIMITS.cap}`
    book.deps.timeline?.(`placement ${intent.id}`, {
      ok: job.state === 'succeeded',
      source: 'recovery',
      detail:
        job.state === 'succeeded'
          ? `recovered ${intent.key} on ${intent.id} (${attempt})`
          : `recovery of ${intent.key} on ${intent.id} failed (${attempt})`,
      error: job.error,
    })
    // The operator stopped or replaced it meanwhile: the intent is theirs.
    if (after === undefined) return void this.status.delete(intent.id)
    if (job.state !== 'succeeded')
      book.intents.put({ ...after, recovery: { ...after.recovery, error: job.error ?? `the job ended ${job.state}` } })
    this.again = true
  }

  /** The views hear of a status change (not of a round that changed nothing). */
  private changedIfNeeded(): void {
    const now = JSON.stringify([...this.status].sort(([a], [b]) => a.localeCompare(b)))
    if (now === this.shown) return
    this.shown = now
    this.deps.book.changed()
  }
}

/** The name an intent's engine serves (its key when the catalog no longer has it). */
function servedOf(intent: PlacementIntent, entry: CatalogEntry | undefined): string {
  return entry === undefined ? intent.key : servedName(entry)
}

/** `12:04:30 UTC`: when the next attempt is due. */
function clockText(at: number | null): string {
  return at === null ? 'unknown' : `${new Date(at).toISOString().slice(11, 19)} UTC`
}
