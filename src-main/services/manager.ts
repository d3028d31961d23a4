import fs from 'node:fs'
import { z } from 'zod'
import YAML from 'yaml'
import type { Config } from '../config/load'
import { ApiError } from '../contract/errors'
import { ContainerName, ImageRef, NodeName, Port, ServiceName, VolumeSource } from '../contract/schemas'
import type { ServiceAction as ServiceActionSchema } from '../contract/services'
import type { Clock } from '../lib/clock'
import { atomicWriteFile } from '../lib/files'
import type { Logger } from '../lib/logger'
import { ROLE_NAMES, serviceBase, type RoleName, type ServiceDirectory } from '../cluster/serviceDirectory'
import { inspectContainers, nodeNameOf, nodeUnreachable, unknownContainer, type ContainerInfo } from './containers'
import type { ServiceHistory } from './history'
import { unreachableLabel } from './labels'
import { PROBE_TIMEOUT_MS, type SshPool, type SshTarget } from '../ssh/pool'
import { shq } from '../ssh/quote'
import { placementEngineAt, placementIdOf, placementRows } from './placementServices'
import type { PlacementServices, ServiceControl, ServiceLocation } from './types'

/** `docker start|stop|restart` can wait for a container's own shutdown (10 s by default) and more. */
const ACTION_TIMEOUT_MS = 90_000
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
  /** Where actions on a container are noted (the services list shows them). */
  history: ServiceHistory
  pool: SshPool
  clock: Clock
  logger: Logger
  /** True while a model swap holds the llm: its container is not ours to touch then. */
  swapBusy: () => boolean
  /** The placements besides node1's, each a service `llm@<placement id>` (absent: none). */
  placements?: PlacementServices
}

type ServiceAction = z.infer<typeof ServiceActionSchema>

/**
 * The always-on services (llm, asr, tts) and the custom ones: their containers' state, container
 * actions over SSH, logs and the custom services file. Their status rows are the StatusService's.
 */
export class ServiceManager implements ServiceControl {
  private customs: CustomService[] = []
  /** Entries the validator refused at load: written back unchanged so a hand edit is never lost. */
  private invalid: unknown[] = []
  /** Per node and container set: the inspect in flight or done, and when it began. */
  private readonly states = new Map<string, { at: number; info: Promise<Map<string, ContainerInfo>> }>()

  constructor(private readonly deps: ServiceManagerDeps) {
    this.load()
  }

  /** Forgets the cached container states: the next list inspects again (after an action, or a change made elsewhere). */
  invalidate(): void {
    this.states.clear()
  }

  locate(name: string): ServiceLocation | null {
    const placement = this.placementEngine(name)
    if (placement !== undefined) {
      if (!placement.ssh) return null
      return { name, ssh: placement.ssh, container: placement.container, baseUrl: placement.baseUrl }
    }
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
    const placementId = placementIdOf(name)
    if (placementId !== null) return this.actOnPlacement(name, placementId, action, reason)
    this.deps.logger.info(`service ${action}`, { service: name, container: loc.container, reason })
    const res = await this.deps.pool
      .exec(loc.ssh, `docker ${action} ${shq(loc.container)}`, { timeoutMs: ACTION_TIMEOUT_MS })
      .catch((err: unknown) => {
        if (!nodeUnreachable(err)) throw err
        const node = nodeNameOf(this.deps.config.nodes, loc.ssh) ?? loc.ssh.host
        throw new ApiError('conflict', unreachableLabel(node, (err as Error).message).actions_blocked ?? '')
      })
    this.invalidate()
    const info = await inspectContainers(this.deps.pool, loc.ssh, [loc.container])
    const state = info.get(loc.container)?.state ?? 'unknown'
    const ok = res.code === 0
    const detail = ok ? `${action} done (${reason})` : res.stderr.trim().slice(0, 300) || `exit ${res.code}`
    this.deps.history.note(name, ok ? `${action}: ${reason}` : `${action} failed`)
    return { name, action, ok, container_state: state, detail: this.deps.logger.redactor.redact(detail) }
  }

  /**
   * A placement's engine: restart re-places it (a placement job: launcher, hold and rollback as for any
   * placement; a `docker restart` would lose the launcher's `vllm serve`). Start and stop are the
   * placement's own (place it, or Stop on its head's card), not its container's.
   */
  private async actOnPlacement(
    name: string,
    id: string,
    action: ServiceAction,
    reason: string,
  ): Promise<{ name: string; action: ServiceAction; ok: boolean; container_state: string; detail: string }> {
    const placements = this.deps.placements
    if (placements === undefined) throw new ApiError('not_found', `no service ${name}`)
    if (action !== 'restart')
      throw new ApiError(
        'conflict',
        `${name} is a placement: place it from Models, stop it with Stop on ${id.split('+')[0] ?? id}'s card in Cluster`,
      )
    if (placements.busy()) throw new ApiError('conflict', 'a placement job is running: wait for it to finish')
    this.deps.logger.info('service restart', { service: name, placement: id, reason })
    const jobId = await placements.restart(id, reason)
    this.deps.history.note(name, `restart: ${reason}`)
    const state = (await this.containerStates()).get(name)?.state ?? 'unknown'
    return { name, action, ok: true, container_state: state, detail: `re-placing it on ${id} (job ${jobId})` }
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
    this.deps.history.forget(name)
    this.write()
  }

  /** A placement's engine by its service name (`llm@<placement id>`); undefined when no such placement runs. */
  private placementEngine(name: string): ReturnType<typeof placementEngineAt> | undefined {
    const id = placementIdOf(name)
    const p = id === null ? undefined : placementRows(this.deps.placements).find((x) => x.id === id)
    return p && placementEngineAt(p, this.deps.config.nodes, this.deps.directory.role('llm'))
  }

  private mustLocate(name: string): ServiceLocation {
    const loc = this.locate(name)
    if (loc) return loc
    if ((ROLE_NAMES as readonly string[]).includes(name) || this.placementEngine(name))
      throw new ApiError('conflict', `${name} is not configured (no node to run it on)`)
    throw new ApiError('not_found', `no service ${name}`)
  }

  /**
   * Every service's container state: one `docker inspect` per node for all its containers (always-on
   * and custom), reused for STATE_TTL_MS so a dashboard polling the list does not flood the nodes.
   */
  async containerStates(): Promise<Map<string, ContainerInfo>> {
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
    for (const p of placementRows(this.deps.placements)) {
      const engine = placementEngineAt(p, this.deps.config.nodes, this.deps.directory.role('llm'))
      if (engine.ssh) add(engine.ssh, engine.name, engine.container)
    }
    const out = new Map<string, ContainerInfo>()
    await Promise.all(
      [...byNode].map(async ([key, { ssh, entries }]) => {
        const containers = [...new Set(entries.map((e) => e.container))]
        const id = `${key} ${containers.join(' ')}`
        const now = this.deps.clock.now()
        let cached = this.states.get(id)
        if (!cached || now - cached.at >= STATE_TTL_MS) {
          cached = { at: now, info: inspectContainers(this.deps.pool, ssh, containers) }
          this.states.set(id, cached)
        }
        const info = await cached.info
        for (const e of entries) out.set(e.name, info.get(e.container) ?? unknownContainer('not inspected'))
      }),
    )
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
