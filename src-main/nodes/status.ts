import type { Config } from '../config/load'
import { publicBaseUrl } from '../config/publicUrl'
import type { Clock } from '../lib/clock'
import type { EventPublisher } from '../platform/eventBus'
import { httpCall, HttpUnreachable } from '../lib/httpClient'
import type { Logger } from '../lib/logger'
import type { RoleLocation, RoleName, ServiceDirectory } from '../services/serviceDirectory'
import type { ServiceStatus, StatusView } from '../contract/nodes'
import { shq } from '../ssh/quote'
import { PROBE_TIMEOUT_MS, SshError, type SshPool, type SshTarget } from '../ssh/pool'
import type { ConnectivityStore } from './connectivity'

export type { RoleName } from '../services/serviceDirectory'

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

/** The node (node1, node2) an SSH target is, by host, port and user; null when it is neither. */
export function nodeNameOf(nodes: Config['nodes'], ssh: SshTarget | null): 'node1' | 'node2' | null {
  if (!ssh) return null
  const same = (t: SshTarget | null): boolean =>
    t !== null && t.host === ssh.host && t.port === ssh.port && t.user === ssh.user
  if (same(nodes.node2)) return 'node2'
  return same(nodes.node1) ? 'node1' : null
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
}

/** The llm, asr and tts at a glance (spec 1, 4.1); every check records state changes. */
export class StatusService {
  /** What each service looked like at its last check: a service.state event goes out only on a change. */
  private readonly seen = new Map<RoleName, { label: ServiceStatus['label']; key: string }>()

  constructor(private readonly deps: StatusDeps) {}

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
    const error = http.ok ? null : [http.error, container.error].filter(Boolean).join('; ') || null
    const label = container.unreachable
      ? unreachableLabel(nodeNameOf(this.deps.config.nodes, role.ssh) ?? role.ssh.host, container.error)
      : { label: serviceLabel(container, http, this.deps.clock.now()), label_reason: null, actions_blocked: null }
    await this.deps.connectivity.observe(role.name, http.ok, error ?? undefined)
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
    }
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
      const key = [status.label, status.container_state, status.model ?? '', status.upstream_url ?? ''].join('|')
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
  }
}
