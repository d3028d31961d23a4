import path from 'node:path'
import type { servicesContract } from '../contract/services'
import type { CoreDeps, DomainModule } from '../platform/domainModule'
import type { ServiceDirectory } from '../cluster/serviceDirectory'
import type { ModelsModule } from '../models/module'
import type { NodesModule } from '../nodes/module'
import { DeepHealth, type PlacementEngines } from './deepHealth'
import type { ProbeSet } from './probeOutcome'
import { deepHealthHandlers } from './deepHealthHandlers'
import { serviceHandlers, type ServiceMethods } from './handlers'
import { ServiceManager } from './manager'
import { Prebuilt } from './prebuilt'
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

/** What the services domain offers the rest of Tandem besides its API: deep health is the gateway's probe hook. */
export type ServicesModule = DomainModule<Pick<typeof servicesContract, ServicesMethods>> & {
  readonly manager: ServiceManager
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
    restart: async (id) => {
      const p = placements.all().find((x) => x.id === id)
      if (p === undefined) throw new Error(`placement ${id} is no longer placed`)
      if (p.key === null) throw new Error(`${p.served} on ${id} matches no catalog entry, so it cannot be re-placed`)
      // It ran on these nodes already: the fit estimate must not refuse bringing it back.
      const { job_id } = await placements.place(p.key, p.nodes, { displace: true, confirmNoFit: true })
      return job_id
    },
  }
}

/** Composition of the services manager, prebuilt installs, deep health and the speech patches. */
export async function createServicesModule(deps: ServicesDeps): Promise<ServicesModule> {
  const { config, clock, jobs, nodes } = deps
  const logger = deps.logger.child('services')
  const swapBusy = (): boolean => deps.models.swap.holdsLlm()
  // The manager is the one ServiceControl: deep health and the patches restart through it.
  const manager = new ServiceManager({
    config,
    directory: deps.services,
    status: nodes.status,
    pool: nodes.pool,
    clock,
    logger,
    swapBusy,
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
  // A label turning Unhealthy asks for a probe (the status checks read the latest result through
  // what the composition root passed the nodes domain).
  const unfollow = deps.events.subscribe((ev) => {
    if (ev.name === 'service.state') deepHealth.statusChanged(ev.data.service, ev.data.status, ev.data.previous)
  })
  const speechPatches = new SpeechPatches({
    control: manager,
    pool: nodes.pool,
    logger: logger.child('speech-patches'),
    clock,
    overlayDir: defaultOverlayDir(),
  })
  return {
    name: 'services',
    handlers: {
      ...serviceHandlers({ manager, prebuilt, jobs }),
      ...deepHealthHandlers(deepHealth),
      ...speechPatchHandlers(speechPatches),
    },
    manager,
    prebuilt,
    deepHealth,
    speechPatches,
    start() {
      deepHealth.start()
    },
    stop() {
      unfollow()
      deepHealth.stop()
    },
  }
}
