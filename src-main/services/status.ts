import type { Config } from '../config/load'
import { publicBaseUrl } from '../config/publicUrl'
import type { Clock } from '../lib/clock'
import type { EventPublisher } from '../platform/eventBus'
import type { Logger } from '../lib/logger'
import { serviceBase, type RoleLocation, type RoleName, type ServiceDirectory } from '../cluster/serviceDirectory'
import type { DeepHealthVerdict, PlacementServiceStatus, ServiceStatus, StatusView } from '../contract/nodes'
import type { ServiceRecord } from '../contract/services'
import type { NodeName } from '../contract/schemas'
import type { NodesModule } from '../nodes/module'
import type { SshPool } from '../ssh/pool'
import { inspectContainer, nodeNameOf, type ContainerInfo } from './containers'
import { httpHealth, type HttpHealth } from './healthCheck'
import type { ServiceHistory } from './history'
import { deepHealthVerdict, labelByHealth, withDeepHealth, type LabelParts, type LatestProbe } from './labels'
import type { CustomService, ServiceManager } from './manager'
import type { ProbeSubject } from './deepHealthHook'
import { placementEngineAt, placementRows } from './placementServices'
import type { PlacementServices } from './types'

/**
 * Deep health as the status checks read it: the latest probe of each service and a way to ask for
 * one (DeepHealth; the services module passes it in).
 */
export interface DeepHealthSource {
  /** The latest probe of a service, or null when there is none yet. */
  latest(service: ProbeSubject): LatestProbe | null
  /** Probes now in the background, joining a probe in flight (the limits every request meets). */
  requestProbe(service: ProbeSubject, reason: string): unknown
}

type Common = Pick<ServiceStatus, 'name' | 'port' | 'container' | 'base_url'>

/** What a check needs of where a service runs: an always-on role, or a placement's engine (`llm@<placement id>`). */
type Checked = Pick<RoleLocation, 'ssh' | 'container' | 'port' | 'baseUrl'> & { readonly name: ProbeSubject }

/** What one check of a configured service saw: its node's host, its own address, its container and its answer. */
interface Seen {
  host: string
  upstream: string
  container: ContainerInfo
  http: HttpHealth
}

/** The one builder of a configured service's row, always-on or custom. */
function statusRow(
  common: Common,
  seen: Seen,
  label: LabelParts,
  error: string | null,
  deep: DeepHealthVerdict | null,
): ServiceStatus {
  return {
    ...common,
    configured: true,
    host: seen.host,
    container_state: seen.container.state,
    restart_count: seen.container.restart_count,
    started_at: seen.container.started_at,
    http_ok: seen.http.ok,
    http_ms: seen.http.ms,
    model: seen.http.model,
    upstream_url: seen.upstream,
    ...label,
    error,
    deep_health: deep,
  }
}

/** The record of a service with no node to run on. */
export function notConfiguredStatus(common: Common, error: string | null): ServiceStatus {
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

/** Why a check failed, from the HTTP answer and the container (null when /health answered OK). */
function checkError(http: HttpHealth, container: ContainerInfo): string | null {
  return http.ok ? null : [http.error, container.error].filter(Boolean).join('; ') || null
}

export interface StatusDeps {
  config: Config
  /** Where llm, asr and tts live. */
  services: ServiceDirectory
  pool: SshPool
  connectivity: Pick<NodesModule['connectivity'], 'observe'>
  clock: Clock
  logger: Logger
  events?: EventPublisher
  /** Deep health's latest results, so the labels carry them (see deepHealthVerdict). */
  deepHealth?: DeepHealthSource
  /** The custom services and every container's state (the services manager), for the services list. */
  customs: Pick<ServiceManager, 'customServices' | 'containerStates'>
  /** The list's recent changes per service. */
  history: ServiceHistory
  /** The placements besides node1's, each checked as its own service (absent: none). */
  placements?: PlacementServices
}

/**
 * The status of every service (spec 1, 4.1 and 4.5): the llm, asr and tts at a glance, and the
 * services list with the custom ones; every check of llm, asr and tts records state changes.
 */
export class StatusService {
  /** What each service looked like at its last check: a service.state event goes out only on a change. */
  private readonly seen = new Map<RoleName, { label: ServiceStatus['label']; key: string }>()
  /** Per service: the container start last seen, and when the service last came up (null while /health fails). */
  private readonly up = new Map<ProbeSubject, { start: string; since: number | null }>()
  private readonly deepHealth: DeepHealthSource | null

  constructor(private readonly deps: StatusDeps) {
    this.deepHealth = deps.deepHealth ?? null
  }

  /** `known`: the container's state when the caller already inspected it (one SSH call for many). */
  async check(role: RoleLocation, signal?: AbortSignal, known?: ContainerInfo): Promise<ServiceStatus> {
    return this.checkAt(role, signal, known, true)
  }

  /** `observe`: the check feeds the connectivity store (llm, asr and tts; a placement's engine does not). */
  private async checkAt(
    role: Checked,
    signal: AbortSignal | undefined,
    known: ContainerInfo | undefined,
    observe: boolean,
  ): Promise<ServiceStatus> {
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
    // The node's name only shows on an unreachable one (labelByHealth).
    const node = container.unreachable ? (nodeNameOf(this.deps.config.nodes, role.ssh) ?? role.ssh.host) : role.ssh.host
    const byHealth = labelByHealth(node, container, http, this.deps.clock.now())
    const { label, deep, error } = this.applyDeepHealth(role.name, byHealth, container, http)
    if (observe) await this.deps.connectivity.observe(role.name, http.ok, http.ok ? undefined : (error ?? undefined))
    return statusRow(common, { host: role.ssh.host, upstream, container, http }, label, error, deep)
  }

  /** A custom service's row: by its container and /health only (deep health probes only llm, asr and tts). */
  async checkCustom(
    c: CustomService,
    container: ContainerInfo | undefined,
    signal?: AbortSignal,
  ): Promise<ServiceStatus> {
    const ssh = this.deps.config.nodes[c.node]
    const base = ssh ? serviceBase(ssh.host, c.port) : null
    const common = { name: c.name, port: c.port, container: c.container, base_url: base ?? '' }
    if (!ssh || base === null || !container) return notConfiguredStatus(common, `${c.node} is not configured`)
    const http = await httpHealth(base, signal)
    const label = labelByHealth(c.node, container, http, this.deps.clock.now())
    return statusRow(
      common,
      { host: ssh.host, upstream: base, container, http },
      label,
      checkError(http, container),
      null,
    )
  }

  /**
   * The label with deep health's latest result applied, the error to show, and a new probe asked
   * for when the latest has gone stale on a service that is Healthy again.
   */
  private applyDeepHealth(
    service: ProbeSubject,
    base: LabelParts,
    container: ContainerInfo,
    http: HttpHealth,
  ): { label: LabelParts; deep: DeepHealthVerdict | null; error: string | null } {
    const latest = this.deepHealth?.latest(service) ?? null
    const deep = deepHealthVerdict(latest, this.cameUp(service, container, http.ok))
    const label = withDeepHealth(base, deep)
    // Any result from before it came up again (a passing one too) is stale: probe at once, so the note goes.
    if (base.label === 'Healthy' && deep !== null && deep.stale)
      this.deepHealth?.requestProbe(service, `it came up again after a ${deep.ok ? 'passing' : 'failing'} probe`)
    return { label, deep, error: label === base ? checkError(http, container) : (latest?.error ?? null) }
  }

  /** When the service last came up: its /health turned OK, or a new container start was seen while it answers. */
  private cameUp(service: ProbeSubject, container: ContainerInfo, httpOk: boolean): number | null {
    const start = `${container.started_at ?? ''}|${container.restart_count ?? ''}`
    const prev = this.up.get(service)
    const since = !httpOk ? null : prev?.since != null && prev.start === start ? prev.since : this.deps.clock.now()
    this.up.set(service, { start, since })
    return since
  }

  /** `known`: containers already inspected, by service name (llm, asr, tts, `llm@<placement id>`). */
  async all(signal?: AbortSignal, known: ReadonlyMap<string, ContainerInfo> = new Map()): Promise<StatusView> {
    const roles = this.deps.services.roles()
    const [llm, asr, tts, placements] = await Promise.all([
      this.check(roles.llm, signal, known.get('llm')),
      this.check(roles.asr, signal, known.get('asr')),
      this.check(roles.tts, signal, known.get('tts')),
      this.placementStatuses(signal, known),
    ])
    this.publishChanges({ llm, asr, tts })
    return { llm, asr, tts, placements, checked_at: this.deps.clock.now() }
  }

  /** Each placement besides node1's, checked as a service: its engine's container on its head and its /health. */
  private placementStatuses(
    signal: AbortSignal | undefined,
    known: ReadonlyMap<string, ContainerInfo>,
  ): Promise<PlacementServiceStatus[]> {
    const llm = this.deps.services.role('llm')
    return Promise.all(
      placementRows(this.deps.placements).map(async (p) => {
        const engine = placementEngineAt(p, this.deps.config.nodes, llm)
        const status = await this.checkAt(engine, signal, known.get(engine.name), false)
        return { ...status, placement: engine.placement }
      }),
    )
  }

  /** Every service with its state, label and recent changes (spec 1, 4.5). */
  async list(signal?: AbortSignal): Promise<{ services: ServiceRecord[]; checked_at: number }> {
    const { customs: manager, history } = this.deps
    const states = await manager.containerStates()
    const [roles, customs] = await Promise.all([
      this.all(signal, states),
      Promise.all(
        manager
          .customServices()
          .map(async (c): Promise<[CustomService, ServiceStatus]> => [
            c,
            await this.checkCustom(c, states.get(c.name), signal),
          ]),
      ),
    ])
    const record = (
      s: ServiceStatus,
      custom: boolean,
      node: NodeName | null,
      placement: ServiceRecord['placement'] = null,
    ): ServiceRecord => ({ ...s, custom, node, placement, recent_changes: history.label(s.name, s.label) })
    const roleRecord = (name: RoleName): ServiceRecord =>
      record(roles[name], false, nodeNameOf(this.deps.config.nodes, this.deps.services.role(name).ssh))
    // Each placement's engine right after the llm (node1's), so the engines read together.
    const records: ServiceRecord[] = [roleRecord('llm')]
    for (const s of roles.placements) records.push(record(s, false, s.placement.nodes[0] ?? null, s.placement))
    records.push(roleRecord('asr'), roleRecord('tts'))
    for (const [c, s] of customs) records.push(record(s, true, c.node))
    return { services: records, checked_at: this.deps.clock.now() }
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
