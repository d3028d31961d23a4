import path from 'node:path'
import type { servicesContract } from '../contract/services'
import type { nodesContract } from '../contract/nodes'
import { publicBaseUrl } from '../config/publicUrl'
import type { CoreDeps, DomainModule } from '../platform/domainModule'
import type { RoleName, ServiceDirectory } from '../cluster/serviceDirectory'
import type { Handlers } from '../contract/define'
import { ApiError } from '../contract/errors'
import type { ModelsModule } from '../models/module'
import type { NodesModule } from '../nodes/module'
import { DeepHealth, type PlacementEngines } from './deepHealth'
import { probeAfterPlacementJobs } from './deepHealthHook'
import type { ProbeSet } from './probeOutcome'
import { deepHealthHandlers } from './deepHealthHandlers'
import { serviceHandlers, type ServiceMethods } from './handlers'
import { ClusterMonitor } from './clusterMonitor'
import { httpHealth } from './healthCheck'
import { ServiceHistory } from './history'
import { ServiceManager } from './manager'
import { StatusService } from './status'
import { Prebuilt } from './prebuilt'
import type { PlacementServices } from './types'
import { defaultOverlayDir, SpeechPatches } from './speechPatches'
import { speechPatchHandlers } from './speechPatchHandlers'

export interface ServicesDeps extends CoreDeps {
  readonly nodes: NodesModule
  readonly models: Pick<ModelsModule, 'swap' | 'placements'>
  readonly services: ServiceDirectory
  /** One synthetic request per kind of service, in its protocol (gateway/deepHealthProbes.ts). */
  readonly probes: ProbeSet
}

type ServicesMethods =
  ServiceMethods | 'getDeepHealth' | 'runDeepHealth' | 'getSpeechModels' | 'reapplySpeechModels' | 'restartSpeechModels'

/** The status of the services, a slice of the nodes contract (the dashboard's cluster view). */
type StatusMethods = 'getStatus' | 'getEndpoints'

/** What the services domain offers the rest of Tandem besides its API: deep health is the gateway's probe hook. */
export type ServicesModule = DomainModule<
  Pick<typeof servicesContract, ServicesMethods> & Pick<typeof nodesContract, StatusMethods>
> & {
  readonly manager: ServiceManager
  readonly status: StatusService
  readonly prebuilt: Prebuilt
  readonly deepHealth: DeepHealth
  readonly speechPatches: SpeechPatches
}

/**
 * The placements as deep health probes and restarts them: each placed engine, and a restart that
 * re-places the same model on the same nodes as a placement job (launcher, hold and rollback as for
 * any placement), never a `docker restart` that would lose the launcher's `vllm serve`.
 */
function placementEngines(placements: ModelsModule['placements']): PlacementEngines {
  return {
    list: () => {
      const since = new Map(placements.all().map((p) => [p.id, p.since]))
      return placements.placed().map((r) => ({ id: r.id, baseUrl: r.baseUrl, since: since.get(r.id) ?? null }))
    },
    busy: () => placements.busy(),
    restart: async (id) => replace(placements, id),
  }
}

/** The placements as services (status rows, restart, logs): restart re-places as deep health does. */
function placementServices(placements: ModelsModule['placements']): PlacementServices {
  return { all: () => placements.all(), busy: () => placements.busy(), restart: async (id) => replace(placements, id) }
}

/** Places placement `id`'s model on its nodes again (a placement job); its job id. */
async function replace(placements: ModelsModule['placements'], id: string): Promise<string> {
  const p = placements.all().find((x) => x.id === id)
  if (p === undefined) throw new ApiError('not_found', `placement ${id} is no longer placed`)
  if (p.key === null)
    throw new ApiError('conflict', `${p.served} on ${id} matches no catalog entry, so it cannot be re-placed`)
  // It ran on these nodes already: the fit estimate must not refuse bringing it back.
  const { job_id } = await placements.place(p.key, p.nodes, { displace: true, confirmNoFit: true })
  return job_id
}

/** getStatus and getEndpoints: every always-on service checked where it lives. */
function statusHandlers(
  deps: Pick<ServicesDeps, 'config' | 'services' | 'nodes'>,
  status: StatusService,
): Pick<Handlers<typeof nodesContract>, StatusMethods> {
  return {
    getStatus: async (_in, ctx) => status.all(ctx.signal),
    getEndpoints: async (_in, ctx) => {
      const v1 = `${publicBaseUrl(deps.config)}/v1`
      const one = async (role: RoleName) => {
        const upstream = deps.services.role(role).baseUrl
        if (upstream === null) return { base_url: v1, model: null, ready: false }
        const h = await httpHealth(upstream, ctx.signal)
        await deps.nodes.connectivity.observe(role, h.ok, h.error ?? undefined)
        return { base_url: v1, model: h.model, ready: h.ok }
      }
      const [llm, asr, tts] = await Promise.all([one('llm'), one('asr'), one('tts')])
      return { llm, asr, tts }
    },
  }
}

/**
 * Composition of the services manager, the status checks, prebuilt installs, deep health, the
 * speech patches and the background probes. Built in the order each needs the others: the manager
 * (containers), deep health (restarts through the manager), the status checks (read deep health's
 * latest results and the manager's containers).
 */
export async function createServicesModule(deps: ServicesDeps): Promise<ServicesModule> {
  const { config, clock, jobs, nodes } = deps
  const logger = deps.logger.child('services')
  const swapBusy = (): boolean => deps.models.swap.holdsLlm()
  const history = new ServiceHistory(clock)
  // The manager is the one ServiceControl: deep health and the patches restart through it.
  const manager = new ServiceManager({
    config,
    directory: deps.services,
    history,
    pool: nodes.pool,
    clock,
    logger,
    swapBusy,
    placements: placementServices(deps.models.placements),
  })
  const prebuilt = new Prebuilt({ config, pool: nodes.pool, jobs, manager, clock, logger: logger.child('prebuilt') })
  const deepHealth = new DeepHealth({
    control: manager,
    directory: deps.services,
    pool: nodes.pool,
    connectivity: nodes.connectivity,
    events: deps.events,
    clock,
    logger: logger.child('deep-health'),
    intervalS: config.deepHealthIntervalS,
    swapBusy,
    probes: deps.probes,
    placements: placementEngines(deps.models.placements),
    file: path.join(config.paths.dataDir, 'deep-health.json'),
  })
  const status = new StatusService({
    config,
    services: deps.services,
    pool: nodes.pool,
    connectivity: nodes.connectivity,
    clock,
    logger,
    events: deps.events,
    deepHealth,
    customs: manager,
    history,
    placements: placementServices(deps.models.placements),
  })
  // A label turning Unhealthy asks for a probe (the labels read the latest result from deep health).
  const unfollow = deps.events.subscribe((ev) => {
    if (ev.name === 'service.state') deepHealth.statusChanged(ev.data.service, ev.data.status, ev.data.previous)
  })
  const unfollowJobs = probeAfterPlacementJobs(deps.events, deepHealth)
  const speechPatches = new SpeechPatches({
    control: manager,
    pool: nodes.pool,
    logger: logger.child('speech-patches'),
    clock,
    overlayDir: defaultOverlayDir(),
  })
  const monitor = new ClusterMonitor({
    clock,
    logger,
    intervalS: config.monitorIntervalS,
    watching: () => deps.events.listeners > 0,
    probe: (scope) => Promise.all([nodes.hardware.snapshot(), scope === 'all' ? status.all() : null]),
  })
  return {
    name: 'services',
    handlers: {
      ...serviceHandlers({ manager, status, prebuilt, jobs }),
      ...statusHandlers(deps, status),
      ...deepHealthHandlers(deepHealth),
      ...speechPatchHandlers(speechPatches),
    },
    manager,
    status,
    prebuilt,
    deepHealth,
    speechPatches,
    start() {
      monitor.start()
      deepHealth.start()
    },
    async stop() {
      unfollow()
      unfollowJobs()
      deepHealth.stop()
      await monitor.stop()
    },
  }
}
