import { z } from 'zod'
import type { Clock } from '../lib/clock'
import { atomicWriteFile, readStateFile, replacedStateFileMessage, SerialQueue } from '../lib/files'
import type { EventBus, EventPublisher } from '../platform/eventBus'
import type { PushEvent } from '../contract/events'
import type { Logger } from '../lib/logger'
import { ConnectivityEvent, SubjectState, type ConnectivityView } from '../contract/nodes'

/** Spec 1, 2.7 and 8: the rolling log holds at most 200 events. */
export const MAX_EVENTS = 200
/** At most one durable write per this many milliseconds of the clock; changes in between are coalesced. */
export const WRITE_INTERVAL_MS = 1000

type ReportInput = {
  ok: boolean
  source?: string | null
  error?: string | null
  detail?: string | null
  ms?: number | null
}

/**
 * The connectivity store (spec 1, 2.7): per-subject state and last change, cached MACs and a
 * rolling log of transitions and reports, persisted atomically. Every mutation runs through one
 * queue so concurrent writers never lose an update.
 *
 * Persistence is coalesced: a change is written at once when the last write is a second old (by
 * the clock), else by a timer when the second is up, so a burst of reports costs one write of the
 * store, not one per event. `flush()` (called on stop) writes what is pending.
 */
export class ConnectivityStore {
  private data: ConnectivityView = { macs: {}, subjects: {}, events: [] }
  private readonly queue = new SerialQueue()
  private lastWriteAt = -Infinity
  private dirty = false
  private timer: ReturnType<typeof setTimeout> | null = null
  /** Subjects expected to go down now, and why (a model swap holds the llm). */
  private readonly plans = new Map<string, string>()
  /** Subjects a placement job holds: their state follows the job's start and end, not the probes. */
  private readonly held = new Set<string>()
  /** Subjects seen since this store was opened: a period never counts time from before a restart. */
  private readonly sighted = new Set<string>()

  constructor(
    private readonly file: string,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly events?: EventPublisher,
  ) {
    this.load()
  }

  view(): ConnectivityView {
    return structuredClone(this.data)
  }

  mac(subject: string): string | null {
    return this.data.macs[subject] ?? null
  }

  state(subject: string): z.infer<typeof SubjectState> | null {
    return this.data.subjects[subject] ?? null
  }

  /**
   * Marks a subject's coming down time as planned (`reason`, e.g. "planned swap: A → B"), or ends
   * the plan (null). A down transition while planned, and the up that ends it, carry the reason.
   */
  plan(subject: string, reason: string | null): void {
    if (reason === null) this.plans.delete(subject)
    else this.plans.set(subject, reason.slice(0, 500))
  }

  /**
   * What active polling saw. A transition is recorded only when the state differs from the last
   * one; the first sighting of a subject records one only when it is down. `at`: when the probe
   * that saw it began (an outage starts at the first failed probe, not when its timeout ended).
   * While a placement job holds the subject, the job's start and end say its state instead.
   */
  observe(subject: string, up: boolean, detail?: string, at?: number): Promise<ConnectivityEvent | null> {
    return this.queue.run(() => (this.held.has(subject) ? null : this.record(subject, up, detail, at)))
  }

  /**
   * A placement job began on the subject (`reason`: "planned swap: A → B"): it is down for that
   * reason from now, whether or not a probe ever sees it, until jobEnded.
   */
  jobStarted(subject: string, reason: string, at = this.clock.now()): Promise<ConnectivityEvent | null> {
    this.plan(subject, reason)
    this.held.add(subject)
    return this.queue.run(() => this.record(subject, false, undefined, at))
  }

  /** The job ended: `up` when it left the subject serving (the up that ends the planned period); the probes follow. */
  jobEnded(subject: string, up: boolean, at = this.clock.now()): Promise<ConnectivityEvent | null> {
    this.plan(subject, null)
    this.held.delete(subject)
    return this.queue.run(() => (up ? this.record(subject, true, undefined, at) : null))
  }

  private record(
    subject: string,
    up: boolean,
    detail: string | undefined,
    at: number | undefined,
  ): Extract<ConnectivityEvent, { kind: 'transition' }> | null {
    const now = Math.min(at ?? Infinity, this.clock.now())
    const state = up ? 'up' : 'down'
    const prev = this.data.subjects[subject]
    const first = !this.sighted.has(subject)
    this.sighted.add(subject)
    if (prev && prev.state === state) {
      // Seen again after a restart: its period is counted from now, not across the time no one looked.
      if (first) {
        prev.last_change = Math.max(prev.last_change, now)
        this.save()
      }
      return null
    }
    // A planned down period stays planned up to the up that ends it, even when the plan ended first.
    const planned = up ? prev?.planned : this.plans.get(subject)
    this.data.subjects[subject] = { state, last_change: now, ...(up || !planned ? {} : { planned }) }
    let event: Extract<ConnectivityEvent, { kind: 'transition' }> | null = null
    if (prev || !up) {
      // The period before a restart has no length Tandem saw.
      event = transition(subject, up, now, first ? undefined : prev?.last_change, detail, planned)
      this.append(event)
      this.events?.publish('connectivity.transition', event)
    }
    this.save()
    return event
  }

  /** An outside report (health-event, deep-health, disk deletion): appended, never changes state. */
  report(subject: string, input: ReportInput): Promise<Extract<ConnectivityEvent, { kind: 'report' }>> {
    return this.queue.run(() => {
      const event = {
        at: this.clock.now(),
        subject,
        kind: 'report' as const,
        ok: input.ok,
        source: input.source ?? null,
        error: input.error?.slice(0, 2000) ?? null,
        detail: input.detail?.slice(0, 2000) ?? null,
        ms: input.ms ?? null,
      }
      this.append(event)
      this.save()
      return event
    })
  }

  /** Caches a node's MAC (learned from a hardware probe); writes only on change. */
  setMac(subject: string, mac: string): Promise<void> {
    return this.queue.run(() => {
      if (this.data.macs[subject] === mac) return
      this.data.macs[subject] = mac
      this.save()
    })
  }

  /** Resolves once every queued mutation is on disk (writing now what the coalescing held back). */
  flush(): Promise<void> {
    return this.queue.run(() => {
      if (this.dirty) this.write()
    })
  }

  private append(event: ConnectivityEvent): void {
    this.data.events = appendBounded(this.data.events, event)
  }

  /** Marks the store changed: written now when the last write is a second old, else when the second is up. */
  private save(): void {
    this.dirty = true
    const elapsed = this.clock.now() - this.lastWriteAt
    // A clock set back is no reason to stop writing.
    if (elapsed >= WRITE_INTERVAL_MS || elapsed < 0) return this.write()
    const wait = WRITE_INTERVAL_MS - elapsed
    if (this.timer) return
    // Mutations are synchronous tasks, so the timer never sees half of one.
    this.timer = setTimeout(() => {
      this.timer = null
      if (this.dirty) this.save()
    }, wait)
    this.timer.unref?.()
  }

  private write(): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    this.dirty = false
    this.lastWriteAt = this.clock.now()
    try {
      atomicWriteFile(this.file, JSON.stringify(this.data) + '\n', { mode: 0o600, role: 'connectivity log' })
    } catch (err) {
      // The change stays in memory and is tried again with the next one (or at stop).
      this.dirty = true
      this.logger.warn(`connectivity store ${this.file} could not be written`, { error: err })
    }
  }

  private load(): void {
    const res = readStateFile(
      this.file,
      (text) => parseStore(JSON.parse(text) as unknown, (m) => this.logger.warn(m)),
      this.clock.now(),
    )
    if (res.kind === 'ok') {
      this.data = res.value
      return
    }
    if (res.kind === 'corrupt') {
      this.logger.warn(replacedStateFileMessage('connectivity store', this.file, res, 'starting a fresh one'))
    }
  }
}

/** A transition to up or down at `now`; `since` is when the period that just ended began. */
function transition(
  subject: string,
  up: boolean,
  now: number,
  since: number | undefined,
  detail: string | undefined,
  planned: string | undefined,
): Extract<ConnectivityEvent, { kind: 'transition' }> {
  const seconds = since === undefined ? undefined : Math.max(0, Math.round((now - since) / 1000))
  return {
    at: now,
    subject,
    kind: 'transition',
    state: up ? 'up' : 'down',
    ...(seconds === undefined ? {} : up ? { down_seconds: seconds } : { up_seconds: seconds }),
    ...(detail ? { detail: detail.slice(0, 500) } : {}),
    ...(planned ? { planned } : {}),
  }
}

type PlacementsChanged = Extract<PushEvent, { name: 'placements.changed' }>['data']
type JobStep = NonNullable<PlacementsChanged['step']>

/** The model node1 serves as the job begins: its catalog key when known, else its served name; null: none. */
function leavingModel(data: PlacementsChanged, step: JobStep): string | null {
  const onNode1 = data.placements.find((p) => p.nodes.includes('node1'))
  const keyed = step.loaded?.key ?? onNode1?.key ?? null
  return keyed ?? step.loaded?.served ?? onNode1?.served ?? null
}

/**
 * What a job on node1 does to the llm, in catalog keys where the model is in the catalog (the
 * served name otherwise): "planned swap: A → B", "planned placement: B" (nothing was serving),
 * "planned stop: A", or "planned stop: A (placing B on node2)" when another placement displaces it.
 */
export function plannedReason(data: PlacementsChanged, step: JobStep): string {
  const leaving = leavingModel(data, step)
  if (data.changing?.action === 'stop') return `planned stop: ${leaving ?? step.key}`
  if (!step.placement_id.split('+').includes('node1'))
    return `planned stop: ${leaving ?? 'no model'} (placing ${step.key} on ${step.placement_id})`
  if (leaving === null || (leaving === step.key && !step.loaded)) return `planned placement: ${step.key}`
  if (leaving === step.key) return `planned relaunch: ${step.key}`
  return `planned swap: ${leaving} → ${step.key}`
}

const ends = (phase: JobStep['phase']): boolean => phase === 'ready' || phase === 'failed'

/**
 * Records the llm's down time during a placement job on node1 from the job itself: down (planned,
 * naming the model it leaves and the one it loads) at the job's first step, up when the job leaves
 * a model serving there. A swap shorter than the probes' interval is recorded all the same.
 * Returns the unsubscribe.
 */
export function followSwaps(
  bus: Pick<EventBus, 'subscribe'>,
  store: Pick<ConnectivityStore, 'jobStarted' | 'jobEnded'>,
): () => void {
  let job: { id: string; placesOnNode1: boolean } | null = null
  const onStep = (data: PlacementsChanged, step: JobStep): void => {
    // The job's own record says when it began and ended (the view goes out a moment after each step).
    const record = data.job?.id === step.job_id ? data.job : null
    if (job?.id !== step.job_id && !ends(step.phase)) {
      const placesOnNode1 = data.changing?.action !== 'stop' && step.placement_id.split('+').includes('node1')
      job = { id: step.job_id, placesOnNode1 }
      void store.jobStarted('llm', plannedReason(data, step), record?.started_at)
    } else if (job?.id === step.job_id && ends(step.phase)) {
      // A failed job may have rolled back: the probes say what serves then.
      void store.jobEnded('llm', step.phase === 'ready' && job.placesOnNode1, record?.finished_at ?? undefined)
      job = null
    }
  }
  return bus.subscribe((ev) => {
    // A job on other nodes leaves the llm (node1's engine) serving.
    if (ev.name === 'placements.changed' && ev.data.step?.nodes.includes('node1')) onStep(ev.data, ev.data.step)
  })
}

const LooseFile = z.object({
  macs: z.record(z.string(), z.unknown()).optional(),
  subjects: z.record(z.string(), z.unknown()).optional(),
  events: z.array(z.unknown()).optional(),
})

/**
 * Reads a store written by this or an older version: legacy events named their node in `spark`
 * (moved to `subject`, kind `transition`); entries that do not fit are skipped with a warning. A
 * subject with no saved state takes it from its last transition.
 */
export function parseStore(raw: unknown, warn: (msg: string) => void = () => {}): ConnectivityView {
  const file = LooseFile.parse(raw)
  const out: ConnectivityView = { macs: {}, subjects: {}, events: [] }
  for (const [k, v] of Object.entries(file.macs ?? {})) if (typeof v === 'string') out.macs[k] = v
  for (const [k, v] of Object.entries(file.subjects ?? {})) {
    const s = SubjectState.safeParse(v)
    if (s.success) out.subjects[k] = s.data
    else warn(`connectivity store: state of ${k} skipped (malformed)`)
  }
  let skipped = 0
  for (const e of file.events ?? []) {
    const migrated = migrateEvent(e)
    const parsed = ConnectivityEvent.safeParse(migrated)
    if (parsed.success) out.events.push(parsed.data)
    else skipped++
  }
  if (skipped > 0) warn(`connectivity store: ${skipped} malformed event(s) skipped`)
  out.events = out.events.reduce<ConnectivityEvent[]>(appendBounded, [])
  seedSubjects(out)
  return out
}

/**
 * Legacy stores kept no per-subject state. Without it the next poll would be a first sighting: a
 * node coming back up would record nothing, and the period after it no length.
 */
function seedSubjects(view: ConnectivityView): void {
  const saved = new Set(Object.keys(view.subjects))
  for (const e of view.events) {
    if (e.kind === 'transition' && !saved.has(e.subject))
      view.subjects[e.subject] = { state: e.state, last_change: e.at }
  }
}

/**
 * Appends to the 200-event log. When it is full, reports (which anyone on the LAN can send) go
 * before transitions (what Tandem itself saw): the oldest report is dropped; with no report left, a
 * new transition drops the oldest transition and a new report is not kept.
 */
export function appendBounded(events: ConnectivityEvent[], event: ConnectivityEvent): ConnectivityEvent[] {
  if (events.length < MAX_EVENTS) return [...events, event]
  const oldestReport = events.findIndex((e) => e.kind === 'report')
  if (oldestReport >= 0) return [...events.slice(0, oldestReport), ...events.slice(oldestReport + 1), event]
  if (event.kind === 'report') return events
  return [...events.slice(events.length - MAX_EVENTS + 1), event]
}

function migrateEvent(e: unknown): unknown {
  if (typeof e !== 'object' || e === null) return e
  const ev = { ...(e as Record<string, unknown>) }
  if ('spark' in ev) {
    ev.subject = ev.spark
    delete ev.spark
    ev.kind = 'transition'
  }
  // Older stores wrote times in seconds (ts) rather than milliseconds (at).
  if (ev.at === undefined && typeof ev.ts === 'number') {
    ev.at = ev.ts < 1e11 ? Math.round(ev.ts * 1000) : ev.ts
    delete ev.ts
  }
  if (ev.kind === 'transition') migrateTransition(ev)
  delete ev.up
  return ev
}

/** Gives a legacy transition the state it left implicit and whole-second durations. */
function migrateTransition(ev: Record<string, unknown>): void {
  if (ev.state === undefined && typeof ev.up === 'boolean') ev.state = ev.up ? 'up' : 'down'
  const { down_seconds: downFor, up_seconds: upFor } = ev
  // The period that ended names the new state: a down period ends when the subject comes back up.
  // With both or neither there is nothing to go on, so the event stays malformed.
  if (ev.state === undefined && (typeof downFor === 'number') !== (typeof upFor === 'number'))
    ev.state = typeof downFor === 'number' ? 'up' : 'down'
  // Older versions wrote float seconds; Tandem records whole ones.
  if (typeof downFor === 'number') ev.down_seconds = Math.round(downFor)
  if (typeof upFor === 'number') ev.up_seconds = Math.round(upFor)
}
