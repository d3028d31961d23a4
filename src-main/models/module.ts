import type { FitEstimate, LauncherInfo, modelsContract } from '../contract/models'
import type { placementsContract } from '../contract/placements'
import type { NodeName } from '../contract/schemas'
import { nodeNames } from '../config/load'
import type { DomainModule } from '../platform/domainModule'
import { serviceBase } from '../cluster/serviceDirectory'
import { ModelCatalog } from './catalog'
import { catalogHandlers } from './catalogHandlers'
import { WeightsOnDisk } from './disk'
import { diskHandlers } from './diskHandlers'
import { Downloads } from './downloads'
import { FitEstimator } from './fit'
import { LauncherProbe } from './launcherCapabilities'
import { PlacementManager } from './placements'
import { Recipes } from './recipes'
import { placementHandlers } from './placementHandlers'
import { EngineMetrics, type EngineTarget } from './engineMetrics'
import type { ModelRouter, ModelsDeps } from './types'
import { LaunchValidator } from './validate'

/** What the models domain offers the rest of Tandem besides its API. */
export type ModelsModule = DomainModule<typeof modelsContract & typeof placementsContract> & {
  /** The placements; as `swap`, the spec's single llm (busy, loaded) for services and updates. */
  readonly placements: PlacementManager
  readonly swap: PlacementManager
  /** The gateway's routing by model name and hold while a placement job touches a model. */
  readonly router: ModelRouter
  readonly catalog: ModelCatalog
  /** The launcher on node1 as read per connection; an applied update calls `invalidate`. */
  readonly launcher: LauncherProbe
  /** Each placement engine's own /metrics, read on its own timer (federated into Tandem's /metrics). */
  readonly engineMetrics: EngineMetrics
  /**
   * Whether the placement's engine has requests running or waiting at its last reading, whoever
   * sent them: in use for idle unloading and on-demand eviction. False when not known.
   */
  engineBusy(placementId: string): boolean
}

/** Composition of the catalog, fit estimate, recipes, weights on disk, downloads, validation and placements. */
export async function createModelsModule(deps: ModelsDeps): Promise<ModelsModule> {
  const { config, clock, jobs, nodes } = deps
  const logger = deps.logger.child('models')
  const catalog = new ModelCatalog({ config, logger })
  const names = (): readonly NodeName[] => nodeNames(config)
  const targetOf = (node: NodeName) => nodes.targets[node] ?? null
  // A placement's head runs the launcher: one probe per node, made when first asked.
  const probes = new Map<NodeName, LauncherProbe>()
  const probeOn = (node: NodeName): LauncherProbe => {
    let probe = probes.get(node)
    if (probe === undefined) {
      probe = new LauncherProbe({
        pool: nodes.pool,
        node,
        target: targetOf(node),
        launcherDir: config.llm.launcherDir,
        clock,
        logger,
      })
      probes.set(node, probe)
    }
    return probe
  }
  const launcher = probeOn('node1')
  const launcherOn = (node: NodeName): Promise<LauncherInfo> => probeOn(node).info()
  const validator = new LaunchValidator({ config, pool: nodes.pool, targetOf, logger, launcherOn })
  // The fit estimate needs disk sizes and the placements' memory, the disk needs the placements,
  // the placements need the estimate: each reaches the next through a closure, called only after all exist.
  const placements: PlacementManager = new PlacementManager({
    config,
    clock,
    logger,
    jobs,
    events: deps.events,
    catalog,
    validator,
    pool: nodes.pool,
    nodeNames: names,
    targetOf,
    engineUrl: (head) => engineUrl(head),
    llmHint: () => deps.services.role('llm').hint,
    estimate: (key, on): Promise<FitEstimate> => fit.estimate(key, undefined, on),
    headsCheck: (key, on) => fit.headsCheck(key, on),
    launcherOn,
    launcherKnown: (node) => probes.get(node)?.known() ?? null,
    hardware: () => nodes.hardware.snapshot(),
    engineBusy: (id) => engineMetrics.busy(id),
    // In use: requests in flight through the gateway, or the engine's own running or waiting ones.
    isBusy: (id) => (deps.isBusy?.(id) ?? false) || engineMetrics.busy(id),
    timeline: (subject, report) => void nodes.connectivity.report(subject, report),
  })
  const engineUrl = (head: NodeName): string | null =>
    head === 'node1' ? deps.services.role('llm').baseUrl : serviceBase(targetOf(head)?.host, config.llm.port)
  const disk: WeightsOnDisk = new WeightsOnDisk({ catalog, nodes, jobs, swap: placements, logger, clock })
  const fit: FitEstimator = new FitEstimator({
    catalog,
    nodes,
    logger,
    nodeNames: names,
    diskBytes: (key, node): Promise<number | null> => disk.bytesOn(key, node),
    othersOn: (node, snapshot) => placements.othersOn(node, snapshot),
  })
  const engineMetrics: EngineMetrics = new EngineMetrics({
    targets: () => engineTargets(placements, engineUrl),
    now: () => clock.now(),
    logger,
    intervalMs: config.engineMetrics.intervalS * 1000,
    keepAll: config.engineMetrics.keepAll,
  })
  const recipes = new Recipes({ config, nodes, logger })
  const downloads = new Downloads({ config, nodes, jobs, swap: placements, logger })
  const unfollow = deps.events.subscribe((ev) => {
    if (ev.name === 'hardware.snapshot') placements.followHardware(ev.data)
  })

  return {
    name: 'models',
    handlers: {
      ...catalogHandlers({ catalog, fit, recipes, swap: placements }),
      ...diskHandlers({ disk, downloads, jobs }),
      ...placementHandlers({ placements, validator, catalog, nodeNames: names, engineMetrics }),
      launcherInfo: async ({ refresh }) => launcher.info(refresh === true),
    },
    placements,
    swap: placements,
    router: placements,
    catalog,
    launcher,
    engineMetrics,
    engineBusy: (id) => engineMetrics.busy(id),
    async start() {
      await placements.start()
      engineMetrics.start()
    },
    async stop() {
      unfollow()
      await engineMetrics.stop()
      await placements.stop()
    },
  }
}

/** The placements whose engines are up or may be (not one being loaded), with their engines' origins. */
function engineTargets(placements: PlacementManager, engineUrl: (head: NodeName) => string | null): EngineTarget[] {
  const out: EngineTarget[] = []
  for (const p of placements.all()) {
    const baseUrl = p.state === 'loading' ? null : engineUrl(p.head)
    if (baseUrl !== null) out.push({ placement: p.id, node: p.head, model: p.key ?? p.served, baseUrl })
  }
  return out
}
