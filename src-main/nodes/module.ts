import path from 'node:path'
import type { nodesContract } from '../contract/nodes'
import { ApiError } from '../contract/errors'
import type { Handlers } from '../contract/define'
import type { Logger } from '../lib/logger'
import type { CoreDeps, DomainModule } from '../platform/domainModule'
import { HostKeyStore } from '../ssh/hostKeys'
import { ensureServiceKey, type ServiceKey } from '../ssh/keys'
import { SshPool } from '../ssh/pool'
import { sshKeyView } from '../ssh/authorize'
import { normalizeMac, type NodeName } from '../contract/schemas'
import { ConnectivityStore, followSwaps } from './connectivity'
import { hostKeyHandlers } from './hostKeyHandlers'
import { HardwareService } from './hardware'
import { HardwareHistory } from './hardwareHistory'
import { publicBaseUrl } from '../config/publicUrl'
import { nodeNames, type NodeTargets } from '../config/load'
import { wake, type WakeRelay } from './wol'

/** The nodes methods; the status of the services on them (getStatus, getEndpoints) is the services domain's. */
type NodesMethods = Exclude<keyof typeof nodesContract, 'getStatus' | 'getEndpoints'>

/** What the nodes domain offers the rest of Tandem besides its API: the SSH pool and the stores. */
export type NodesModule = DomainModule<Pick<typeof nodesContract, NodesMethods>> & {
  readonly pool: SshPool
  readonly connectivity: ConnectivityStore
  readonly hardware: HardwareService
  readonly serviceKey: ServiceKey
  readonly hostKeys: HostKeyStore
  /** Every configured node: node1 and node2 (null = not configured), then node3… from NODES. */
  readonly targets: NodeTargets
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
  const connectivity = new ConnectivityStore(config.paths.connectivityLog, clock, logger, deps.events)
  const unfollowSwaps = followSwaps(deps.events, connectivity)
  const targets = config.nodes
  const history = new HardwareHistory(
    path.join(config.paths.dataDir, 'hardware-history.json'),
    clock,
    logger,
    nodeNames(config),
  )
  const hardware = new HardwareService({ pool, connectivity, clock, logger, targets, events: deps.events, history })
  const base = (): string => publicBaseUrl(config)

  const handlers: Handlers<Pick<typeof nodesContract, NodesMethods>> = {
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
    wakeNode: async ({ name, mac }) =>
      wakeNode(
        { pool, connectivity, hardware, logger, targets, broadcast: config.wolBroadcast, ports: opts.wolPorts },
        name,
        mac,
      ),
    getSshPublicKey: async () => sshKeyView(serviceKey, targets),
    ...hostKeyHandlers({ hostKeys, pool, logger, onChange: () => hardware.invalidate() }),
  }

  return {
    name: 'nodes',
    handlers,
    pool,
    connectivity,
    hardware,
    serviceKey,
    hostKeys,
    targets,
    publicBaseUrl: base,
    async stop() {
      unfollowSwaps()
      hardware.stop()
      hardware.flushHistory()
      await connectivity.flush()
      await pool.close()
    },
  }
}

interface WakeDeps {
  readonly pool: SshPool
  readonly connectivity: ConnectivityStore
  readonly hardware: HardwareService
  readonly logger: Logger
  readonly targets: NodeTargets
  readonly broadcast: string
  readonly ports?: readonly number[]
}

/**
 * The nodes that may send a wake packet for `node`: every other configured one, node1 and node2
 * first as before; those last seen down go to the back.
 */
function wakeRelays(d: WakeDeps, node: NodeName): WakeRelay[] {
  const relays = nodeNames({ nodes: d.targets }).flatMap((name) => {
    const target = d.targets[name] ?? null
    return name !== node && target !== null ? [{ name, target }] : []
  })
  const down = (r: WakeRelay): number => (d.connectivity.state(r.name)?.state === 'down' ? 1 : 0)
  return relays.sort((a, b) => down(a) - down(b))
}

/** Wakes a node with the given MAC or the one cached from its last probe, relayed through another node. */
async function wakeNode(d: WakeDeps, node: NodeName, given: string | undefined) {
  if (!nodeNames({ nodes: d.targets }).includes(node))
    throw new ApiError('not_found', `no ${node} here: nodes past node2 are listed in NODES (Settings → Nodes)`)
  let mac: string
  if (given !== undefined) mac = given
  else {
    const cached = d.connectivity.mac(node)
    if (cached === null)
      throw new ApiError('conflict', `no MAC known for ${node} yet: it is learned from a successful hardware probe`)
    const norm = normalizeMac(cached)
    if (norm === null)
      throw new ApiError('bad_input', `the cached MAC for ${node} is malformed (${JSON.stringify(cached)})`)
    mac = norm
  }
  const outcome = await wake(
    { pool: d.pool, logger: d.logger, broadcastAddress: d.broadcast, ports: d.ports },
    mac,
    wakeRelays(d, node),
  )
  const target = d.targets[node] ?? null
  if (target) d.pool.clearUnreachable(target)
  d.hardware.invalidate()
  d.logger.info('wake-on-LAN sent', { node, mac, via: outcome.via })
  return {
    ok: outcome.ok,
    node,
    mac,
    via: outcome.via,
    relay: outcome.relay,
    attempts: outcome.attempts,
  }
}
