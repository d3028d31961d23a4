import { nodeNames, type Config } from '../config/load'
import { publicBaseUrl } from '../config/publicUrl'
import type { Clock } from '../lib/clock'
import type { EventPublisher } from '../platform/eventBus'
import { httpCall, HttpUnreachable } from '../lib/httpClient'
import type { Logger } from '../lib/logger'
import type { RoleLocation, RoleName, ServiceDirectory } from '../cluster/serviceDirectory'
import type { DeepHealthVerdict, ServiceStatus, StatusView } from '../contract/nodes'
import type { DeepHealthResult } from '../contract/services'
import type { NodeName } from '../contract/schemas'
import { shq } from '../ssh/quote'
import { PROBE_TIMEOUT_MS, SshError, type SshPool, type SshTarget } from '../ssh/pool'
import type { ConnectivityStore } from './connectivity'

export type { RoleName } from '../cluster/serviceDirectory'

/** A container that started this recently and does not answer yet is Starting, not Unhealthy. */
export const STARTING_GRACE_MS = 10 * 60 * 1000
const HTTP_TIMEOUT_MS = 4000

export interface ContainerInfo {
  state: string
  started_at: string | null
  restart_count: number | null
  error: string | null
  /** The node did not answer over SSH (down, or no answer in time): nothing about the container is known. */
  unreachable?: boolean
}

/** Whether an SSH failure means the node itself cannot be reached (not a refused key or a failed command). */
export function nodeUnreachable(err: unknown): boolean {
  return err instanceof SshError && (err.kind === 'unreachable' || err.kind === 'timeout')
}

/** The node an SSH target is, by host, port and user (node2 first, the speech node); null when it is none. */
export function nodeNameOf(nodes: Config['nodes'], ssh: SshTarget | null): NodeName | null {
  if (!ssh) return null
  const same = (t: SshTarget | null | undefined): boolean =>
    t !== null && t !== undefined && t.host === ssh.host && t.port === ssh.port && t.user === ssh.user
  if (same(nodes.node2)) return 'node2'
  return nodeNames({ nodes }).find((name) => same(nodes[name])) ?? null
}

/**
 * The label of a service whose node is unreachable: Unknown, whatever its HTTP check says (that may
 * be a stale route or another host), with its actions refused and the reason why.
 */
export function unreachableLabel(
  node: string,
  error: string | null,
): Pick<ServiceStatus, 'label' | 'label_reason' | 'actions_blocked'> {
  return {
    label: 'Unknown',
    label_reason: 'node unreachable',
    actions_blocked: `${node} is unreachable over SSH${error ? ` (${error})` : ''}: its container cannot be read, started or stopped until it answers`,
  }
}

/** `docker inspect` of one container over SSH (6 s): running, exited, …, missing or unknown. */
export async function inspectContainer(
  pool: Pick<SshPool, 'exec'>,
  target: SshTarget,
  container: string,
): Promise<ContainerInfo> {
  try {
    const res = await pool.exec(
      target,
      `docker inspect -f '{{.State.Status}} {{.State.StartedAt}} {{.RestartCount}}' ${shq(container)}`,
      {
        timeoutMs: PROBE_TIMEOUT_MS,
      },
    )
    if (res.code !== 0) {
      if (/no such (object|container)/i.test(res.stderr))
        return { state: 'missing', started_at: null, restart_count: null, error: null }
      return {
        state: 'unknown',
        started_at: null,
        restart_count: null,
        error: res.stderr.trim().slice(0, 300) || `exit ${res.code}`,
      }
    }
    const [state, startedAt, restarts] = res.stdout.trim().split(/\s+/)
    return {
      state: state || 'unknown',
      started_at: startedAt && !startedAt.startsWith('0001-') ? startedAt : null,
      restart_count: restarts !== undefined && /^\d+$/.test(restarts) ? Number(restarts) : null,
      error: null,
    }
  } catch (err) {
    return {
      state: 'unknown',
      started_at: null,
      restart_count: null,
      error: (err as Error).message,
      unreachable: nodeUnreachable(err),
    }
  }
}

export interface HttpHealth {
  ok: boolean
  /** The service answered at all (any HTTP status): an answer with an error is not "still starting". */
  answered: boolean
  ms: number | null
  model: string | null
  error: string | null
}

/**
 * The label rules (spec 1, 4.1), in order:
 * - Healthy: the health check answers OK (the container state is then secondary);
 * - Stopped: the container exists but is not running (exited, created, paused, dead);
 * - Starting: the container is restarting, or started less than STARTING_GRACE_MS ago and does not
 *   answer yet;
 * - Unhealthy: everything else, including a service that answers with an error (HTTP 500 is a fault,
 *   not a start-up), a missing container and an unreadable one.
 * Not configured is decided before any check (no node or no usable address), and Unknown after it
 * when the node does not answer over SSH (unreachableLabel).
 */
export function serviceLabel(
  container: Pick<ContainerInfo, 'state' | 'started_at'>,
  http: Pick<HttpHealth, 'ok' | 'answered'>,
  now: number,
): Exclude<ServiceStatus['label'], 'Not configured'> {
  if (http.ok) return 'Healthy'
  if (['exited', 'created', 'paused', 'dead'].includes(container.state)) return 'Stopped'
  if (http.answered) return 'Unhealthy'
  if (container.state === 'restarting') return 'Starting'
  const startedMs = container.started_at ? Date.parse(container.started_at) : NaN
  const recentlyStarted = Number.isFinite(startedMs) && now - startedMs < STARTING_GRACE_MS
  return container.state === 'running' && recentlyStarted ? 'Starting' : 'Unhealthy'
}

type LabelParts = Pick<ServiceStatus, 'label' | 'label_reason' | 'actions_blocked'>
type LatestProbe = Pick<DeepHealthResult, 'ok' | 'wedged' | 'at' | 'error'>

/**
 * Deep health as the status checks read it: the services domain's DeepHealth, bound once both
 * exist (it restarts through the services manager, which reads these checks).
 */
export interface DeepHealthSource {
  /** The latest probe of a service, or null when there is none yet. */
  latest(service: RoleName): LatestProbe | null
  /** Probes now in the background, joining a probe in flight (the limits every request meets). */
  requestProbe(service: RoleName, reason: string): unknown
}

/**
 * The card and the deep-health row agree (issue 31). A /health that answers OK says the process is
 * up, not that it works: a failed deep-health probe that began after the service last came up (its
 * /health turned OK, or a new container start was seen) is newer evidence, so Healthy reads
 * "Unhealthy (deep health: wedged)" until a later probe passes. A failed probe from before the
 * service came up again is stale: the label follows /health and deep health probes again at once.
 * Other labels (Stopped, Starting, Unknown, Unhealthy by /health) already say more than the probe.
 */
export function deepHealthVerdict(latest: LatestProbe | null, upSince: number | null): DeepHealthVerdict | null {
  if (latest === null) return null
  return { ok: latest.ok, wedged: latest.wedged, at: latest.at, stale: upSince !== null && latest.at <= upSince }
}

/** The label a deep-health verdict makes of `base` (see deepHealthVerdict). */
export function withDeepHealth(base: LabelParts, verdict: DeepHealthVerdict | null): LabelParts {
  if (base.label !== 'Healthy' || verdict === null || verdict.ok || verdict.stale) return base
  return {
    label: 'Unhealthy',
    label_reason: `deep health: ${verdict.wedged ? 'wedged' : 'failing'}`,
    actions_blocked: null,
  }
}

/** GET /health then /v1/models on the service itself. */
export async function httpHealth(baseUrl: string, signal?: AbortSignal): Promise<HttpHealth> {
  const t0 = performance.now()
  const timeout = AbortSignal.timeout(HTTP_TIMEOUT_MS)
  const sig = signal ? AbortSignal.any([signal, timeout]) : timeout
  try {
    const health = await httpCall(`${baseUrl}/health`, { signal: sig })
    health.discard()
    const ms = Math.round(performance.now() - t0)
    if (!health.ok) return { ok: false, answered: true, ms, model: null, error: `HTTP ${health.status} from /health` }
    let model: string | null = null
    try {
      const models = await httpCall(`${baseUrl}/v1/models`, { signal: sig })
      if (models.ok) {
        const body = (await models.json()) as { data?: { id?: unknown }[] }
        const id = body.data?.[0]?.id
        model = typeof id === 'string' ? id : null
      } else models.discard()
    } catch {
      // health answered; the model list is optional
    }
    return { ok: true, answered: true, ms, model, error: null }
  } catch (err) {
    const e = err as Error
    const reason =
      e.name === 'TimeoutError'
        ? `no answer within ${HTTP_TIMEOUT_MS / 1000} s`
        : e instanceof HttpUnreachable
          ? (e.code ?? e.message)
          : e.message
    return { ok: false, answered: false, ms: null, model: null, error: reason }
  }
}

export interface StatusDeps {
  config: Config
  /** Where llm, asr and tts live. */
  services: ServiceDirectory
  pool: SshPool
  connectivity: ConnectivityStore
  clock: Clock
  logger: Logger
  events?: EventPublisher
  /** Deep health's latest results, so the labels carry them (see deepHealthVerdict); the composition root passes it. */
  deepHealth?: DeepHealthSource
}

/** The llm, asr and tts at a glance (spec 1, 4.1); every check records state changes. */
export class StatusService {
  /** What each service looked like at its last check: a service.state event goes out only on a change. */
  private readonly seen = new Map<RoleName, { label: ServiceStatus['label']; key: string }>()
  /** Per service: the container start last seen, and when the service last came up (null while /health fails). */
  private readonly up = new Map<RoleName, { start: string; since: number | null }>()
  private readonly deepHealth: DeepHealthSource | null

  constructor(private readonly deps: StatusDeps) {
    this.deepHealth = deps.deepHealth ?? null
  }

  /** `known`: the container's state when the caller already inspected it (one SSH call for many). */
  async check(role: RoleLocation, signal?: AbortSignal, known?: ContainerInfo): Promise<ServiceStatus> {
    const base = `${publicBaseUrl(this.deps.config)}/v1`
    const common = { name: role.name, port: role.port, container: role.container, base_url: base }
    if (!role.ssh || role.baseUrl === null) {
      return notConfiguredStatus(common, null)
    }
    const upstream = role.baseUrl
    const [container, http] = await Promise.all([
      known ?? inspectContainer(this.deps.pool, role.ssh, role.container),
      httpHealth(upstream, signal),
    ])
    const byHealth = container.unreachable
      ? unreachableLabel(nodeNameOf(this.deps.config.nodes, role.ssh) ?? role.ssh.host, container.error)
      : { label: serviceLabel(container, http, this.deps.clock.now()), label_reason: null, actions_blocked: null }
    const { label, deep, error } = this.applyDeepHealth(role.name, byHealth, container, http)
    await this.deps.connectivity.observe(role.name, http.ok, http.ok ? undefined : (error ?? undefined))
    return {
      ...common,
      configured: true,
      host: role.ssh.host,
      container_state: container.state,
      restart_count: container.restart_count,
      started_at: container.started_at,
      http_ok: http.ok,
      http_ms: http.ms,
      model: http.model,
      upstream_url: upstream,
      ...label,
      error,
      deep_health: deep,
    }
  }

  /**
   * The label with deep health's latest result applied, the error to show, and a new probe asked
   * for when a failed one has gone stale on a service that is Healthy again.
   */
  private applyDeepHealth(
    service: RoleName,
    base: LabelParts,
    container: ContainerInfo,
    http: HttpHealth,
  ): { label: LabelParts; deep: DeepHealthVerdict | null; error: string | null } {
    const latest = this.deepHealth?.latest(service) ?? null
    const deep = deepHealthVerdict(latest, this.cameUp(service, container, http.ok))
    const label = withDeepHealth(base, deep)
    if (base.label === 'Healthy' && deep !== null && !deep.ok && deep.stale)
      this.deepHealth?.requestProbe(service, 'it came up again after a failing probe')
    const httpError = http.ok ? null : [http.error, container.error].filter(Boolean).join('; ') || null
    return { label, deep, error: label === base ? httpError : (latest?.error ?? null) }
  }

  /** When the service last came up: its /health turned OK, or a new container start was seen while it answers. */
  private cameUp(service: RoleName, container: ContainerInfo, httpOk: boolean): number | null {
    const start = `${container.started_at ?? ''}|${container.restart_count ?? ''}`
    const prev = this.up.get(service)
    const since = !httpOk ? null : prev?.since != null && prev.start === start ? prev.since : this.deps.clock.now()
    this.up.set(service, { start, since })
    return since
  }

  async all(signal?: AbortSignal, known: Partial<Record<RoleName, ContainerInfo>> = {}): Promise<StatusView> {
    const roles = this.deps.services.roles()
    const [llm, asr, tts] = await Promise.all([
      this.check(roles.llm, signal, known.llm),
      this.check(roles.asr, signal, known.asr),
      this.check(roles.tts, signal, known.tts),
    ])
    this.publishChanges({ llm, asr, tts })
    return { llm, asr, tts, checked_at: this.deps.clock.now() }
  }

  private publishChanges(now: Record<RoleName, ServiceStatus>): void {
    for (const service of ['llm', 'asr', 'tts'] as const) {
      const status = now[service]
      const deep = status.deep_health
      const key = [
        status.label,
        status.label_reason ?? '',
        status.container_state,
        status.model ?? '',
        status.upstream_url ?? '',
        deep ? `${deep.ok}:${deep.at}:${deep.stale}` : '',
      ].join('|')
      const prev = this.seen.get(service)
      if (prev?.key === key) continue
      this.seen.set(service, { label: status.label, key })
      this.deps.events?.publish('service.state', { service, previous: prev?.label ?? null, status })
    }
  }
}

/** The record of a service with no node to run on. */
export function notConfiguredStatus(
  common: Pick<ServiceStatus, 'name' | 'port' | 'container' | 'base_url'>,
  error: string | null,
): ServiceStatus {
  return {
    ...common,
    configured: false,
    host: null,
    container_state: 'unknown',
    restart_count: null,
    started_at: null,
    http_ok: false,
    http_ms: null,
    model: null,
    upstream_url: null,
    label: 'Not configured',
    label_reason: null,
    actions_blocked: null,
    error,
    deep_health: null,
  }
}
