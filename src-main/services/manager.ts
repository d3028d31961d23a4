import fs from 'node:fs'
import { z } from 'zod'
import YAML from 'yaml'
import type { Config } from '../config/load'
import { ApiError } from '../contract/errors'
import type { ServiceStatus } from '../contract/nodes'
import { ContainerName, ImageRef, NodeName, Port, ServiceName, VolumeSource } from '../contract/schemas'
import type { ServiceAction as ServiceActionSchema, ServiceRecord } from '../contract/services'
import type { Clock } from '../lib/clock'
import { atomicWriteFile } from '../lib/files'
import type { Logger } from '../lib/logger'
import { ROLE_NAMES, serviceBase, type RoleName, type ServiceDirectory } from '../cluster/serviceDirectory'
import {
  httpHealth,
  nodeNameOf,
  nodeUnreachable,
  notConfiguredStatus,
  serviceLabel,
  unreachableLabel,
  type ContainerInfo,
  type StatusService,
} from '../nodes/types'
import { PROBE_TIMEOUT_MS, type SshPool, type SshTarget } from '../ssh/pool'
import { shq } from '../ssh/quote'
import type { ServiceControl, ServiceLocation } from './types'

/** `docker start|stop|restart` can wait for a container's own shutdown (10 s by default) and more. */
const ACTION_TIMEOUT_MS = 90_000
const MAX_CHANGES = 20
/** How long one `docker inspect` of a node's containers answers the services list. */
const STATE_TTL_MS = 2000

/** One custom service as SERVICES_OVERRIDES holds it (installed from the catalog or added by hand). */
export const CustomService = z.object({
  name: ServiceName,
  node: NodeName,
  container: ContainerName,
  port: Port,
  image: ImageRef.nullable().default(null),
  volume: VolumeSource.nullable().default(null),
  cache_path: z.string().nullable().default(null),
  /** Installed to serve as the asr or tts role. */
  role: z.enum(['asr', 'tts']).nullable().default(null),
  added_at: z.number().default(0),
})
export type CustomService = z.infer<typeof CustomService>

export interface ServiceManagerDeps {
  config: Pick<Config, 'nodes'> & { paths: Pick<Config['paths'], 'servicesOverrides'> }
  directory: ServiceDirectory
  status: StatusService
  pool: SshPool
  clock: Clock
  logger: Logger
  /** True while a model swap holds the llm: its container is not ours to touch then. */
  swapBusy: () => boolean
}

type Change = ServiceRecord['recent_changes'][number]
type ServiceAction = z.infer<typeof ServiceActionSchema>

/**
 * The always-on services (llm, asr, tts) and the custom ones: their state and labels, container
 * actions over SSH, logs, the custom services file and the state-change history.
 */
export class ServiceManager implements ServiceControl {
  private customs: CustomService[] = []
  /** Entries the validator refused at load: written back unchanged so a hand edit is never lost. */
  private invalid: unknown[] = []
  private readonly changes = new Map<string, Change[]>()
  private readonly lastLabel = new Map<string, string>()
  /** Per node and container set: the inspect in flight or done, and when it began. */
  private readonly states = new Map<string, { at: number; info: Promise<Map<string, ContainerInfo>> }>()

  constructor(private readonly deps: ServiceManagerDeps) {
    this.load()
  }

  /** Every service with its state, label and recent changes (spec 1, 4.5). */
  async list(signal?: AbortSignal): Promise<{ services: ServiceRecord[]; checked_at: number }> {
    const states = await this.containerStates()
    const known: Partial<Record<RoleName, ContainerInfo>> = {}
    for (const name of ROLE_NAMES) {
      const info = states.get(name)
      if (info) known[name] = info
    }
    const [roles, customs] = await Promise.all([
      this.deps.status.all(signal, known),
      Promise.all(
        this.customs.map(async (c): Promise<[CustomService, ServiceStatus]> => {
          const ssh = this.deps.config.nodes[c.node]
          const base = ssh ? serviceBase(ssh.host, c.port) : null
          return [c, await this.customStatus(c, base, states.get(c.name), signal)]
        }),
      ),
    ])
    const records: ServiceRecord[] = []
    for (const name of ROLE_NAMES) {
      const s = roles[name]
      records.push(this.record(s, false, this.nodeOf(this.deps.directory.role(name).ssh)))
    }
    for (const [c, s] of customs) records.push(this.record(s, true, c.node))
    return { services: records, checked_at: this.deps.clock.now() }
  }

  /** Forgets the cached container states: the next list inspects again (after an action, or a change made elsewhere). */
  invalidate(): void {
    this.states.clear()
  }

  locate(name: string): ServiceLocation | null {
    if ((ROLE_NAMES as readonly string[]).includes(name)) {
      const role = this.deps.directory.role(name as RoleName)
      if (!role.ssh) return null
      return { name, ssh: role.ssh, container: role.container, baseUrl: role.baseUrl }
    }
    const c = this.customs.find((x) => x.name === name)
    const ssh = c ? this.deps.config.nodes[c.node] : null
    if (!c || !ssh) return null
    return { name, ssh, container: c.container, baseUrl: serviceBase(ssh.host, c.port) }
  }

  async restart(name: string, reason: string): Promise<void> {
    const r = await this.act(name, 'restart', reason)
    if (!r.ok) throw new Error(`restarting ${name} failed: ${r.detail}`)
  }

  /** start, stop or restart of a service's container (409 for the llm while a swap holds it). */
  async act(
    name: string,
    action: ServiceAction,
    reason = 'operator',
  ): Promise<{ name: string; action: ServiceAction; ok: boolean; container_state: string; detail: string }> {
    const loc = this.mustLocate(name)
    if (name === 'llm' && this.deps.swapBusy())
      throw new ApiError('conflict', 'a model swap holds the llm: wait for it to finish')
    this.deps.logger.info(`service ${action}`, { service: name, container: loc.container, reason })
    const res = await this.deps.pool
      .exec(loc.ssh, `docker ${action} ${shq(loc.container)}`, { timeoutMs: ACTION_TIMEOUT_MS })
      .catch((err: unknown) => {
        if (!nodeUnreachable(err)) throw err
        const node = nodeNameOf(this.deps.config.nodes, loc.ssh) ?? loc.ssh.host
        throw new ApiError('conflict', unreachableLabel(node, (err as Error).message).actions_blocked ?? '')
      })
    this.invalidate()
    const info = await this.inspect(loc.ssh, [loc.container])
    const state = info.get(loc.container)?.state ?? 'unknown'
    const ok = res.code === 0
    const detail = ok ? `${action} done (${reason})` : res.stderr.trim().slice(0, 300) || `exit ${res.code}`
    this.note(name, ok ? `${action}: ${reason}` : `${action} failed`)
    return { name, action, ok, container_state: state, detail: this.deps.logger.redactor.redact(detail) }
  }

  /** The container's last `tail` lines, every line through the logger's redactor. */
  async logs(name: string, tail: number): Promise<{ name: string; container: string; lines: string[] }> {
    const loc = this.mustLocate(name)
    const res = await this.deps.pool.exec(loc.ssh, `docker logs --tail ${shq(tail)} ${shq(loc.container)} 2>&1`, {
      timeoutMs: PROBE_TIMEOUT_MS * 2,
    })
    if (res.code !== 0) throw new ApiError('conflict', `docker logs failed: ${res.stdout.trim().slice(0, 300)}`)
    const redact = (l: string): string => this.deps.logger.redactor.redact(l)
    const lines = res.stdout.split(/\r?\n/).filter((l) => l !== '')
    return { name, container: loc.container, lines: lines.map(redact) }
  }

  customServices(): readonly CustomService[] {
    return this.customs
  }

  /** Adds or replaces a custom service and writes the file. */
  saveCustom(entry: CustomService): void {
    if ((ROLE_NAMES as readonly string[]).includes(entry.name))
      throw new ApiError('conflict', `${entry.name} is an always-on service`)
    this.customs = [...this.customs.filter((c) => c.name !== entry.name), entry]
    this.invalidate()
    this.write()
  }

  /** Stops and removes a custom service's container, then forgets it (always-on services: 409). */
  async remove(name: string): Promise<void> {
    if ((ROLE_NAMES as readonly string[]).includes(name))
      throw new ApiError('conflict', `${name} is an always-on service and cannot be removed`)
    const c = this.customs.find((x) => x.name === name)
    if (!c) throw new ApiError('not_found', `no custom service ${name}`)
    const ssh = this.deps.config.nodes[c.node]
    if (ssh) {
      const res = await this.deps.pool.exec(ssh, `docker rm -f ${shq(c.container)}`, { timeoutMs: ACTION_TIMEOUT_MS })
      if (res.code !== 0 && !/no such container/i.test(res.stderr))
        throw new ApiError('conflict', `docker rm failed: ${res.stderr.trim().slice(0, 300)}`)
    }
    this.customs = this.customs.filter((x) => x.name !== name)
    this.invalidate()
    this.changes.delete(name)
    this.lastLabel.delete(name)
    this.write()
  }

  private mustLocate(name: string): ServiceLocation {
    const loc = this.locate(name)
    if (loc) return loc
    if ((ROLE_NAMES as readonly string[]).includes(name))
      throw new ApiError('conflict', `${name} is not configured (no node to run it on)`)
    throw new ApiError('not_found', `no service ${name}`)
  }

  private nodeOf(ssh: SshTarget | null): NodeName | null {
    return nodeNameOf(this.deps.config.nodes, ssh)
  }

  private record(s: ServiceStatus, custom: boolean, node: NodeName | null): ServiceRecord {
    const prev = this.lastLabel.get(s.name)
    if (prev !== s.label) {
      this.lastLabel.set(s.name, s.label)
      this.push(s.name, { at: this.deps.clock.now(), from: prev ?? null, to: s.label })
    }
    return { ...s, custom, node, recent_changes: [...(this.changes.get(s.name) ?? [])] }
  }

  private note(name: string, what: string): void {
    this.push(name, { at: this.deps.clock.now(), from: this.lastLabel.get(name) ?? null, to: what })
  }

  private push(name: string, change: Change): void {
    const list = this.changes.get(name) ?? []
    list.push(change)
    if (list.length > MAX_CHANGES) list.splice(0, list.length - MAX_CHANGES)
    this.changes.set(name, list)
  }

  /**
   * Every service's container state: one `docker inspect` per node for all its containers (always-on
   * and custom), reused for STATE_TTL_MS so a dashboard polling the list does not flood the nodes.
   */
  private async containerStates(): Promise<Map<string, ContainerInfo>> {
    const byNode = new Map<string, { ssh: SshTarget; entries: { name: string; container: string }[] }>()
    const add = (ssh: SshTarget, name: string, container: string): void => {
      const key = `${ssh.user}@${ssh.host}:${ssh.port}`
      const group = byNode.get(key) ?? { ssh, entries: [] }
      group.entries.push({ name, container })
      byNode.set(key, group)
    }
    for (const name of ROLE_NAMES) {
      const role = this.deps.directory.role(name)
      if (role.ssh) add(role.ssh, name, role.container)
    }
    for (const c of this.customs) {
      const ssh = this.deps.config.nodes[c.node]
      if (ssh) add(ssh, c.name, c.container)
    }
    const out = new Map<string, ContainerInfo>()
    await Promise.all(
      [...byNode].map(async ([key, { ssh, entries }]) => {
        const containers = [...new Set(entries.map((e) => e.container))]
        const id = `${key} ${containers.join(' ')}`
        const now = this.deps.clock.now()
        let cached = this.states.get(id)
        if (!cached || now - cached.at >= STATE_TTL_MS) {
          cached = { at: now, info: this.inspect(ssh, containers) }
          this.states.set(id, cached)
        }
        const info = await cached.info
        for (const e of entries) out.set(e.name, info.get(e.container) ?? unknownContainer('not inspected'))
      }),
    )
    return out
  }

  private async customStatus(
    c: CustomService,
    base: string | null,
    container: ContainerInfo | undefined,
    signal?: AbortSignal,
  ): Promise<ServiceStatus> {
    const common = { name: c.name, port: c.port, container: c.container, base_url: base ?? '' }
    if (base === null || !container) return notConfiguredStatus(common, `${c.node} is not configured`)
    const http = await httpHealth(base, signal)
    const label = container.unreachable
      ? unreachableLabel(c.node, container.error)
      : { label: serviceLabel(container, http, this.deps.clock.now()), label_reason: null, actions_blocked: null }
    return {
      ...common,
      configured: true,
      host: this.deps.config.nodes[c.node]?.host ?? null,
      container_state: container.state,
      restart_count: container.restart_count,
      started_at: container.started_at,
      http_ok: http.ok,
      http_ms: http.ms,
      model: http.model,
      upstream_url: base,
      ...label,
      error: http.ok ? null : [http.error, container.error].filter(Boolean).join('; ') || null,
      // Deep health probes only llm, asr and tts.
      deep_health: null,
    }
  }

  /** `docker inspect` of several containers in one SSH call; a missing one is `missing`. */
  private async inspect(ssh: SshTarget, containers: string[]): Promise<Map<string, ContainerInfo>> {
    const out = new Map<string, ContainerInfo>()
    const fmt = `{{.Name}} {{.State.Status}} {{.State.StartedAt}} {{.RestartCount}}`
    try {
      const res = await this.deps.pool.exec(ssh, `docker inspect -f ${shq(fmt)} ${containers.map(shq).join(' ')}`, {
        timeoutMs: PROBE_TIMEOUT_MS,
      })
      for (const line of res.stdout.split('\n')) {
        const [name, state, startedAt, restarts] = line.trim().split(/\s+/)
        if (!name || !state) continue
        out.set(name.replace(/^\//, ''), {
          state,
          started_at: startedAt && !startedAt.startsWith('0001-') ? startedAt : null,
          restart_count: restarts !== undefined && /^\d+$/.test(restarts) ? Number(restarts) : null,
          error: null,
        })
      }
      for (const c of containers)
        if (!out.has(c))
          out.set(
            c,
            /no such (object|container)/i.test(res.stderr)
              ? { state: 'missing', started_at: null, restart_count: null, error: null }
              : unknownContainer(res.stderr.trim().slice(0, 300) || `exit ${res.code}`),
          )
    } catch (err) {
      for (const c of containers)
        out.set(c, { ...unknownContainer((err as Error).message), unreachable: nodeUnreachable(err) })
    }
    return out
  }

  /** Reads SERVICES_OVERRIDES; an entry that does not validate is skipped with a warning and kept. */
  private load(): void {
    const file = this.deps.config.paths.servicesOverrides
    let raw: unknown
    try {
      raw = YAML.parse(fs.readFileSync(file, 'utf8'))
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        this.deps.logger.warn('custom services file unreadable: starting without custom services', {
          file,
          error: err,
        })
      return
    }
    const entries = (raw as { services?: unknown } | null)?.services
    if (!Array.isArray(entries)) return
    for (const entry of entries) {
      const parsed = CustomService.safeParse(entry)
      const clash = parsed.success && (ROLE_NAMES as readonly string[]).includes(parsed.data.name)
      if (parsed.success && !clash && !this.customs.some((c) => c.name === parsed.data.name))
        this.customs.push(parsed.data)
      else {
        this.invalid.push(entry)
        this.deps.logger.warn('custom service entry skipped', {
          file,
          entry: JSON.stringify(entry).slice(0, 200),
          error: parsed.success ? 'a duplicate or always-on name' : parsed.error.issues[0]?.message,
        })
      }
    }
  }

  private write(): void {
    const doc = { services: [...this.customs, ...this.invalid] }
    atomicWriteFile(this.deps.config.paths.servicesOverrides, YAML.stringify(doc), {
      mode: 0o600,
      role: 'service settings',
    })
  }
}

function unknownContainer(error: string): ContainerInfo {
  return { state: 'unknown', started_at: null, restart_count: null, error }
}
