import type { nodesContract } from '../contract/nodes'
import { ApiError } from '../contract/errors'
import type { Handlers } from '../contract/define'
import type { CoreDeps, DomainModule } from '../core/module'
import { HostKeyStore } from '../ssh/hostKeys'
import { ensureServiceKey, type ServiceKey } from '../ssh/keys'
import { SshPool, type SshTarget } from '../ssh/pool'
import { shq } from '../ssh/quote'
import { MacAddress, NodeName, normalizeMac } from '../ssh/validators'
import { ConnectivityStore } from './connectivity'
import { HardwareService } from './hardware'
import { publicBaseUrl } from '../config/publicUrl'
import { httpHealth, roleTargets, StatusService, type RoleName } from './status'
import { wake } from './wol'

/** What the nodes domain offers the rest of Tandem besides its API: the SSH pool and the stores. */
export type NodesModule = DomainModule<typeof nodesContract> & {
  readonly pool: SshPool
  readonly connectivity: ConnectivityStore
  readonly hardware: HardwareService
  readonly status: StatusService
  readonly serviceKey: ServiceKey
  readonly hostKeys: HostKeyStore
  /** node1 and node2 as configured (null = not configured). */
  readonly targets: Readonly<Record<NodeName, SshTarget | null>>
  /** Tandem's public base URL (no trailing slash); clients reach `/v1` under it. */
  publicBaseUrl(): string
}

export interface NodesOptions {
  /** UDP ports for the direct Wake-on-LAN broadcast (tests use ephemeral ones). */
  wolPorts?: readonly number[]
}

/** Composition of the SSH pool, hardware probes, connectivity store and Wake-on-LAN. */
export async function createNodesModule(deps: CoreDeps, opts: NodesOptions = {}): Promise<NodesModule> {
  const { config, clock } = deps
  const logger = deps.logger.child('nodes')
  const serviceKey = ensureServiceKey(config.paths.sshDir, { warn: (m) => logger.warn(m) })
  const hostKeys = new HostKeyStore(
    config.paths.knownHosts,
    () => clock.now(),
    (m) => logger.warn(m),
  )
  const pool = new SshPool({ privateKey: serviceKey.privateKey, hostKeys, clock, logger: logger.child('ssh') })
  const connectivity = new ConnectivityStore(config.paths.connectivityLog, clock, logger)
  const targets = { node1: config.nodes.node1, node2: config.nodes.node2 }
  const hardware = new HardwareService({ pool, connectivity, clock, logger, targets })
  const status = new StatusService({ config, pool, connectivity, clock, logger })
  const base = (): string => publicBaseUrl(config)

  const handlers: Handlers<typeof nodesContract> = {
    getHardware: async ({ fresh }) => hardware.snapshot({ fresh: fresh === true }),
    getHardwareHistory: async () => hardware.history(),
    getConnectivity: async () => connectivity.view(),
    healthEvent: async (input) => {
      const event = await connectivity.report(input.service, {
        ok: input.ok,
        source: input.source ?? null,
        error: input.error ?? null,
        ms: input.ms ?? null,
      })
      return { ok: true as const, event }
    },
    wakeNode: async ({ name, mac: given }) => {
      const parsedName = NodeName.safeParse(name)
      if (!parsedName.success)
        throw new ApiError('not_found', `unknown node ${JSON.stringify(name)}; expected node1 or node2`)
      const node = parsedName.data
      let mac: string
      if (given !== undefined) {
        const m = MacAddress.safeParse(given)
        if (!m.success) throw new ApiError('bad_input', `malformed MAC address ${JSON.stringify(given)}`)
        mac = m.data
      } else {
        const cached = connectivity.mac(node)
        if (cached === null)
          throw new ApiError('conflict', `no MAC known for ${node} yet: it is learned from a successful hardware probe`)
        const norm = normalizeMac(cached)
        if (norm === null)
          throw new ApiError('bad_input', `the cached MAC for ${node} is malformed (${JSON.stringify(cached)})`)
        mac = norm
      }
      const relayName: NodeName = node === 'node1' ? 'node2' : 'node1'
      const relay = targets[relayName]
      const outcome = await wake(
        { pool, logger, broadcastAddress: config.wolBroadcast, ports: opts.wolPorts },
        mac,
        relay,
      )
      const target = targets[node]
      if (target) pool.clearUnreachable(target)
      hardware.invalidate()
      logger.info('wake-on-LAN sent', { node, mac, via: outcome.via })
      return {
        ok: outcome.ok,
        node,
        mac,
        via: outcome.via,
        relay: outcome.via === 'relay' ? relayName : null,
        attempts: outcome.attempts,
      }
    },
    getStatus: async (_in, ctx) => status.all(ctx.signal),
    getEndpoints: async (_in, ctx) => {
      const roles = roleTargets(config)
      const v1 = `${base()}/v1`
      const one = async (role: RoleName) => {
        const r = roles[role]
        if (!r.ssh) return { base_url: v1, model: null, ready: false }
        const h = await httpHealth(
          `http://${r.ssh.host.includes(':') ? `[${r.ssh.host}]` : r.ssh.host}:${r.port}`,
          ctx.signal,
        )
        await connectivity.observe(role, h.ok, h.error ?? undefined)
        return { base_url: v1, model: h.model, ready: h.ok }
      }
      const [llm, asr, tts] = await Promise.all([one('llm'), one('asr'), one('tts')])
      return { llm, asr, tts }
    },
    getSshPublicKey: async () => ({
      public_key: serviceKey.publicKey,
      fingerprint: serviceKey.fingerprint,
      nodes: (['node1', 'node2'] as const).flatMap((node) => {
        const t = targets[node]
        if (!t) return []
        const remote = authorizeCommand(serviceKey.publicKey)
        const portFlag = t.port === 22 ? '' : `-p ${t.port} `
        return [
          {
            node,
            host: t.host,
            user: t.user,
            port: t.port,
            remote_command: remote,
            command: `ssh ${portFlag}${shq(`${t.user}@${t.host}`)} ${shq(remote)}`,
          },
        ]
      }),
    }),
    listKnownHosts: async () =>
      hostKeys.list().map(({ name, entry }) => ({
        name,
        type: entry.type,
        fingerprint: entry.fingerprint,
        added_at: entry.added_at,
      })),
    forgetHostKey: async ({ host, port }) => {
      const forgotten = hostKeys.forget(host, port)
      for (const t of Object.values(targets)) if (t && t.host === host && t.port === port) pool.clearUnreachable(t)
      if (forgotten) logger.info('forgot SSH host key', { host, port })
      return { forgotten }
    },
  }

  // Background probes keep the connectivity history going while no dashboard is open.
  let monitor: ReturnType<typeof setInterval> | null = null
  let tick: Promise<void> | null = null
  const probeAll = async (): Promise<void> => {
    try {
      await Promise.all([hardware.snapshot(), status.all()])
    } catch (err) {
      logger.warn('background probe failed', { error: err })
    }
  }

  return {
    name: 'nodes',
    handlers,
    pool,
    connectivity,
    hardware,
    status,
    serviceKey,
    hostKeys,
    targets,
    publicBaseUrl: base,
    start() {
      if (config.monitorIntervalS <= 0) return
      monitor = setInterval(() => {
        tick ??= probeAll().finally(() => (tick = null))
      }, config.monitorIntervalS * 1000)
      monitor.unref()
    },
    async stop() {
      if (monitor) clearInterval(monitor)
      await tick
      await connectivity.flush()
      await pool.close()
    },
  }
}

/** Appends the key to ~/.ssh/authorized_keys on the node, once, with the right modes. */
export function authorizeCommand(publicKey: string): string {
  const line = shq(publicKey)
  return `umask 077 && mkdir -p ~/.ssh && touch ~/.ssh/authorized_keys && (grep -qxF ${line} ~/.ssh/authorized_keys || printf '%s\\n' ${line} >> ~/.ssh/authorized_keys)`
}
