import type { z } from 'zod'
import type { Clock } from '../lib/clock'
import type { EventPublisher } from '../platform/eventBus'
import type { Logger } from '../lib/logger'
import type { ServiceDirectory } from '../cluster/serviceDirectory'
import type { ServiceStatus } from '../contract/nodes'
import type { DeepHealthResult, DeepHealthView, RestartHold } from '../contract/services'
import {
  placementSubject,
  type DeepHealthHook,
  type ProbedService,
  type ProbeStart,
  type ProbeSubject,
  type ReportSink,
} from './deepHealthHook'
import { inspectContainer } from './containers'
import type { SshPool } from '../ssh/pool'
import {
  failed,
  NoAnswer,
  PROBE_TIMEOUTS_MS,
  wedgePattern,
  wedgeSignature,
  type ProbeOutcome,
  type ProbeSet,
} from './probeOutcome'
import { DeepHealthRecords, isPlacementSubject, isProbedService, kindOf, PROBED_SERVICES } from './deepHealthRecords'
import type { ServiceControl, ServiceLocation } from './types'
import { graceDetail, RESTART_LIMITS, restartHold } from '../platform/restartLimits'

/** Spec 1, 3.3 and 8: the limits on auto-restarts (one limiter, shared with the placement reconciler). */
export { RESTART_LIMITS }

const ERROR_EXCERPT = 300

/** A placement other than node1's as deep health sees it: its engine's address and since when it runs. */
export interface PlacementEngine {
  readonly id: string
  readonly baseUrl: string
  /** When the placement came up (ms), for the start-up grace; null when unknown. */
  readonly since: number | null
}

/** The models domain's placements as deep health needs them (passed in by the composition). */
export interface PlacementEngines {
  /** The placed engines (the one including node1 is the llm service, not probed as a placement). */
  list(): readonly PlacementEngine[]
  /** True while a placement job runs: no placement is restarted then. */
  busy(): boolean
  /** Relaunches placement `id` through the models domain (same model, same nodes, a placement job); its job id. */
  restart(id: string, reason: string): Promise<string>
}

export interface DeepHealthDeps {
  readonly control: ServiceControl
  readonly directory: Pick<ServiceDirectory, 'role'>
  /** For the container's start time (the start-up grace). */
  readonly pool: Pick<SshPool, 'exec'>
  readonly connectivity: ReportSink
  readonly events: EventPublisher
  readonly clock: Clock
  readonly logger: Logger
  /** DEEP_HEALTH_INTERVAL_S. */
  readonly intervalS: number
  /** True while a model swap holds the llm (it is never restarted then). */
  readonly swapBusy: () => boolean
  /** The probe of each kind of service (deepHealthProbes.ts; tests may pass their own). */
  readonly probes: ProbeSet
  /** The placements besides node1's, each probed as an llm with its own counters (absent: none). */
  readonly placements?: PlacementEngines
  /** Per-service probe deadlines (tests shorten them). */
  readonly timeoutsMs?: Partial<Record<ProbedService, number>>
  /** Where the last results and restart counters are kept across daemon restarts (null: memory only). */
  readonly file?: string | null
}

type RestartOutcome = DeepHealthResult['restart']

/** What a wedged subject restarts: its container (a service) or its placement (through the models domain). */
interface RestartTarget {
  /** When it last came up by other hands (a container start, a placement's launch), for the grace. */
  readonly startedAt: () => Promise<{ at: number; what: string } | null>
  /** Restarts it; what was done, for the result's detail. */
  readonly restart: (reason: string) => Promise<string>
}

/**
 * Deep health (spec 1, 3.3, 4.6, 6.2): synthetic probes of asr, tts and llm, every `intervalS`, on
 * request, when a service's status turns Unhealthy, and when the status checks find it Healthy again
 * after a failing probe (status.ts: the card carries the latest result), so the service card
 * and this row agree. A failure that matches a wedge pattern asks for a restart of
 * the container, which happens only outside the start-up grace, the cooldown and the cap; the result
 * says which held it back. The last results and the counters are kept in `file` (bounded, written
 * atomically) so a daemon restart keeps them; recoveries go to the connectivity store as reports.
 * One probe per service at a time; a second request joins it. Each placement besides node1's is its
 * own subject, `llm@<placement id>`, probed as an llm with its own results and counters; its restart
 * re-places it through the models domain (docs/placements.md, Deep health).
 */
export class DeepHealth implements DeepHealthHook {
  private readonly records: DeepHealthRecords
  private readonly inflight = new Map<ProbeSubject, Promise<DeepHealthResult>>()
  private readonly aborts = new Set<AbortController>()
  private readonly followUps = new Set<ReturnType<typeof setTimeout>>()
  private timer: ReturnType<typeof setTimeout> | null = null
  private stopped = false
  /** The daemon's start, for the start-up grace. */
  private readonly since: number

  constructor(private readonly deps: DeepHealthDeps) {
    this.since = deps.clock.now()
    this.records = new DeepHealthRecords({
      file: deps.file,
      clock: deps.clock,
      logger: deps.logger,
      subjects: () => this.subjects(),
    })
    this.records.load()
  }

  /**
   * A service's status label changed (the card): turning Unhealthy by its own /health starts a probe
   * at once. Unhealthy while /health answers OK is this row's own failed probe on the card, so
   * probing again would only repeat it; turning Healthy again is handled by the status checks.
   */
  statusChanged(
    service: ProbedService,
    status: Pick<ServiceStatus, 'label' | 'http_ok'>,
    previous: string | null,
  ): void {
    if (status.label === previous || status.label !== 'Unhealthy' || status.http_ok) return
    this.requestProbe(service, `its status turned Unhealthy (was ${previous ?? 'unchecked'})`)
  }

  /** The latest result of a service's probe, or null before the first (the card carries it). */
  latest(service: ProbeSubject): DeepHealthResult | null {
    return this.records.last.get(service) ?? null
  }

  /** Starts the loop: the first round after one interval (the gateway asks for probes sooner when it sees a failure). */
  start(): void {
    this.stopped = false
    this.schedule()
  }

  stop(): void {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    for (const t of this.followUps) clearTimeout(t)
    this.followUps.clear()
    for (const ac of this.aborts) ac.abort()
  }

  /** The gateway's hook: probe in the background now, or join the probe already running. */
  requestProbe(service: ProbeSubject, reason: string): ProbeStart {
    if (this.stopped || !this.configured(service)) return 'unavailable'
    if (this.inflight.has(service)) return 'running'
    this.deps.logger.info('deep-health probe requested', { service, reason })
    void this.run(service)
    return 'started'
  }

  /** One round: every configured service probed at once. A probe still running from before is joined, not repeated. */
  async round(): Promise<DeepHealthResult[]> {
    const services = this.subjects().filter((s) => this.configured(s))
    const settled = await Promise.allSettled(services.map((s) => this.run(s)))
    return settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []))
  }

  /** Probes one service now (joining a probe in progress); never rejects. */
  run(service: ProbeSubject): Promise<DeepHealthResult> {
    const running = this.inflight.get(service)
    if (running) return running
    const at = this.deps.clock.now()
    const p = this.probe(service, at)
      .catch((err: unknown) => this.crashed(service, at, err))
      .finally(() => this.inflight.delete(service))
    this.inflight.set(service, p)
    return p
  }

  /** Whether deep health can probe `service` (a configured service, or a placement placed now). */
  configured(service: ProbeSubject): boolean {
    return isProbedService(service) ? this.locate(service) !== null : this.engineOf(service) !== null
  }

  view(): z.infer<typeof DeepHealthView> {
    const now = this.deps.clock.now()
    return {
      interval_s: this.deps.intervalS,
      services: this.subjects().map((service) => {
        const c = this.records.countersOf(service)
        return {
          service,
          configured: this.configured(service),
          running: this.inflight.has(service),
          last: this.records.last.get(service) ?? null,
          restarts_last_30m: c.recent.filter((t) => now - t < RESTART_LIMITS.windowMs).length,
          last_restart_at: c.last,
          total_restarts: c.total,
        }
      }),
    }
  }

  private schedule(): void {
    if (this.stopped) return
    this.timer = setTimeout(
      () => {
        // The next round is timed from this one's start, so a hung probe never delays the others.
        this.schedule()
        this.round().catch((err: unknown) => this.deps.logger.error('deep-health round failed', { error: err }))
      },
      Math.max(10, this.deps.intervalS * 1000),
    )
    this.timer.unref?.()
  }

  /** The subjects a round probes and the view lists: the services, then each placement besides node1's. */
  private subjects(): ProbeSubject[] {
    const placed = this.engines()
      .map((e) => placementSubject(e.id))
      .filter((s) => s !== 'llm')
    return [...PROBED_SERVICES, ...placed]
  }

  private engines(): readonly PlacementEngine[] {
    try {
      return this.deps.placements?.list() ?? []
    } catch (err) {
      this.deps.logger.warn('could not list the placements for deep health', { error: err })
      return []
    }
  }

  /** The placed engine a `llm@<id>` subject names, or null (not a placement subject, or not placed now). */
  private engineOf(subject: ProbeSubject): PlacementEngine | null {
    if (!isPlacementSubject(subject)) return null
    // node1's placement is the llm service, never also `llm@node1…`.
    return this.engines().find((e) => placementSubject(e.id) === subject) ?? null
  }

  /** The HTTP base a subject's probe goes to, or null when it has none. */
  private baseOf(subject: ProbeSubject): string | null {
    if (isProbedService(subject)) return this.locate(subject)?.baseUrl ?? null
    return this.engineOf(subject)?.baseUrl ?? null
  }

  /** Where the service runs: the services manager's answer, else the configured role. */
  private locate(service: ProbedService): ServiceLocation | null {
    try {
      const fromControl = this.deps.control.locate(service)
      if (fromControl?.baseUrl) return fromControl
      const role = this.deps.directory.role(service)
      if (!role.configured || role.ssh === null) return null
      return { name: service, ssh: role.ssh, container: role.container, baseUrl: role.baseUrl }
    } catch (err) {
      this.deps.logger.warn('could not locate a service for deep health', { service, error: err })
      return null
    }
  }

  /** A probe that threw past its own handling (a broken dependency): a failing result, never a crash. */
  private crashed(service: ProbeSubject, at: number, err: unknown): DeepHealthResult {
    const result: DeepHealthResult = {
      service,
      ok: false,
      at,
      latency_ms: null,
      error: this.excerpt(`probe failed: ${err instanceof Error ? err.message : String(err)}`),
      note: null,
      wedged: false,
      restart: noRestart(),
    }
    try {
      this.record(service, result)
    } catch (again) {
      this.deps.logger.error('deep health could not record a failed probe', { service, error: again })
    }
    return result
  }

  private async probe(service: ProbeSubject, at: number): Promise<DeepHealthResult> {
    const started = performance.now()
    let outcome: ProbeOutcome
    const ac = new AbortController()
    this.aborts.add(ac)
    try {
      const base = this.baseOf(service)
      if (base === null) throw new Error(`${service} is not configured`)
      const kind = kindOf(service)
      const timeout = this.deps.timeoutsMs?.[kind] ?? PROBE_TIMEOUTS_MS[kind]
      outcome = await this.deps.probes[kind](base, AbortSignal.any([ac.signal, AbortSignal.timeout(timeout)]))
    } catch (err) {
      outcome = failed(err instanceof NoAnswer ? err.message : `probe failed: ${(err as Error).message}`)
    } finally {
      this.aborts.delete(ac)
    }
    const latency = Math.round(performance.now() - started)
    const error = outcome.error === null ? null : this.excerpt(outcome.error)
    const wedge = outcome.ok ? null : wedgePattern(outcome.status, outcome.error ?? '')
    const restart = wedge === null ? noRestart() : await this.restartIfAllowed(service, wedge)
    const result: DeepHealthResult = {
      service,
      ok: outcome.ok,
      at,
      latency_ms: latency,
      error,
      note: outcome.note,
      // Labelled for what it is: a known wedge error is "wedged", a bare HTTP 500 only "failing".
      wedged: wedge !== null && wedgeSignature(outcome.error ?? '') !== null,
      restart,
    }
    this.record(service, result)
    return result
  }

  /** Keeps the result, publishes it, and reports a recovery (failing → ok) to the connectivity store. */
  private record(service: ProbeSubject, result: DeepHealthResult): void {
    const before = this.records.last.get(service)
    this.records.last.set(service, result)
    this.records.save()
    try {
      this.deps.events.publish('deephealth.result', result)
    } catch (err) {
      this.deps.logger.error('publishing a deep-health result failed', { error: err })
    }
    if (result.ok && before !== undefined && !before.ok) {
      Promise.resolve()
        .then(() =>
          this.deps.connectivity.report(service, {
            ok: true,
            source: 'deep-health',
            error: null,
            detail: `recovered: probe ok${result.note ? ` (${result.note})` : ''}; it was failing with: ${before.error ?? 'an error'}`,
            ms: result.latency_ms,
          }),
        )
        .catch((err: unknown) => this.deps.logger.error('recording a deep-health recovery failed', { error: err }))
    }
    if (!result.ok)
      this.deps.logger.warn('deep-health probe failed', {
        service,
        error: result.error,
        wedged: result.wedged,
        restart: result.restart,
      })
  }

  /** The limit that holds a restart back now, checked in the order swap, grace, cooldown, cap. */
  private async heldBy(
    service: ProbeSubject,
    target: RestartTarget,
  ): Promise<{ hold: z.infer<typeof RestartHold>; detail: string } | null> {
    const now = this.deps.clock.now()
    const c = this.records.countersOf(service)
    const swap = this.swapHold(service)
    if (swap !== null) return { hold: 'swap', detail: swap }
    const limit = restartHold(c, now, this.since, 'daemon started')
    if (limit !== null) return { hold: limit.hold, detail: limit.detail }
    // Its own start (an operator's restart, docker's restart policy, a placement job): asked last.
    const started = await target.startedAt()
    if (started !== null && now - started.at < RESTART_LIMITS.graceMs)
      return { hold: 'grace', detail: graceDetail(now - started.at, started.what) }
    return null
  }

  /** Why a swap or placement job holds the subject back now, or null. */
  private swapHold(service: ProbeSubject): string | null {
    if (service === 'llm' && this.deps.swapBusy()) return 'a model swap holds the llm; it is never restarted during one'
    if (isPlacementSubject(service) && this.deps.placements?.busy() === true)
      return 'a placement job is running; no placement is restarted during one'
    return null
  }

  /** What restarting `service` means: its container through ServiceControl, or its placement re-placed. */
  private restartTarget(service: ProbeSubject): RestartTarget | null {
    if (!isProbedService(service)) {
      const engine = this.engineOf(service)
      const placements = this.deps.placements
      if (engine === null || placements === undefined) return null
      return {
        startedAt: async () => (engine.since === null ? null : { at: engine.since, what: 'placement came up' }),
        restart: async (reason) => `re-placed ${engine.id} (job ${await placements.restart(engine.id, reason)})`,
      }
    }
    const loc = this.locate(service)
    if (loc === null) return null
    return {
      startedAt: async () => {
        const info = await inspectContainer(this.deps.pool, loc.ssh, loc.container)
        const at = info.started_at === null ? NaN : Date.parse(info.started_at)
        return Number.isFinite(at) ? { at, what: 'container started' } : null
      },
      restart: async (reason) => {
        await this.deps.control.restart(service, reason)
        return `restarted ${loc.container}`
      },
    }
  }

  private async restartIfAllowed(service: ProbeSubject, wedge: string): Promise<RestartOutcome> {
    try {
      const target = this.restartTarget(service)
      if (target === null)
        return { requested: true, done: false, held_by: null, detail: `${service} is not configured` }
      const held = await this.heldBy(service, target)
      if (held) return { requested: true, done: false, held_by: held.hold, detail: held.detail }
      const c = this.records.countersOf(service)
      const now = this.deps.clock.now()
      // An attempt counts against the limits even when it fails: a half-done restart is still one.
      c.recent.push(now)
      c.last = now
      c.total += 1
      this.deps.logger.warn('deep health restarts a wedged engine or container', { service, wedge })
      const done = await target.restart(`deep health: ${wedge}`)
      this.followUp(service)
      return { requested: true, done: true, held_by: null, detail: `${done} (${wedge})` }
    } catch (err) {
      return {
        requested: true,
        done: false,
        held_by: null,
        detail: this.excerpt(`restart failed: ${(err as Error).message}`),
      }
    }
  }

  /** One probe when the grace after a restart is over, so a recovery shows before the next round. */
  private followUp(service: ProbeSubject): void {
    if (this.stopped) return
    const t = setTimeout(() => {
      this.followUps.delete(t)
      // A placement still being re-placed may not be listed yet: the next round probes it.
      if (!this.stopped && this.configured(service)) void this.run(service)
    }, RESTART_LIMITS.graceMs + 5_000)
    t.unref?.()
    this.followUps.add(t)
  }

  private excerpt(text: string): string {
    const t = this.deps.logger.redactor.redact(text).replace(/\s+/g, ' ').trim()
    return t.length > ERROR_EXCERPT ? `${t.slice(0, ERROR_EXCERPT)}…` : t
  }
}

function noRestart(): RestartOutcome {
  return { requested: false, done: false, held_by: null, detail: null }
}
