import type { FitEstimate, LauncherInfo, modelsContract } from '../contract/models'
import type { DomainModule } from '../platform/domainModule'
import { ModelCatalog } from './catalog'
import { catalogHandlers } from './catalogHandlers'
import { WeightsOnDisk } from './disk'
import { diskHandlers } from './diskHandlers'
import { Downloads } from './downloads'
import { FitEstimator } from './fit'
import { LauncherProbe } from './launcherCapabilities'
import { Recipes } from './recipes'
import { SwapManager } from './swap'
import { swapHandlers } from './swapHandlers'
import type { ModelsDeps } from './types'
import { LaunchValidator } from './validate'

/** What the models domain offers the rest of Tandem besides its API: the swap manager (the gateway's hold). */
export type ModelsModule = DomainModule<typeof modelsContract> & {
  readonly swap: SwapManager
  readonly catalog: ModelCatalog
  /** The launcher on node1 as read per connection; an applied update calls `invalidate`. */
  readonly launcher: LauncherProbe
}

/** Composition of the catalog, fit estimate, recipes, weights on disk, downloads, validation and swap. */
export async function createModelsModule(deps: ModelsDeps): Promise<ModelsModule> {
  const { config, clock, jobs, nodes } = deps
  const logger = deps.logger.child('models')
  const catalog = new ModelCatalog({ config, logger })
  const launcher = new LauncherProbe({
    pool: nodes.pool,
    node1: nodes.targets.node1,
    launcherDir: config.llm.launcherDir,
    clock,
    logger,
  })
  const launcherInfo = (): Promise<LauncherInfo> => launcher.info()
  const validator = new LaunchValidator({
    config,
    pool: nodes.pool,
    target: nodes.targets.node1,
    logger,
    launcher: launcherInfo,
  })
  // The fit estimate needs disk sizes, the disk needs the swap state, the swap needs the estimate:
  // the swap reaches the estimator through a closure, called only after all three exist.
  const swap: SwapManager = new SwapManager({
    config,
    clock,
    logger,
    jobs,
    events: deps.events,
    catalog,
    validator,
    pool: nodes.pool,
    targets: nodes.targets,
    llmBaseUrl: () => deps.services.role('llm').baseUrl,
    estimate: (key, mode): Promise<FitEstimate> => fit.estimate(key, mode),
    launcher: launcherInfo,
  })
  const disk: WeightsOnDisk = new WeightsOnDisk({ catalog, nodes, jobs, swap, logger, clock })
  const fit: FitEstimator = new FitEstimator({
    catalog,
    nodes,
    logger,
    diskBytes: (key, node): Promise<number | null> => disk.bytesOn(key, node),
  })
  const recipes = new Recipes({ config, nodes, logger })
  const downloads = new Downloads({ config, nodes, jobs, swap, logger })

  return {
    name: 'models',
    handlers: {
      ...catalogHandlers({ catalog, fit, recipes, swap }),
      ...diskHandlers({ disk, downloads, jobs }),
      ...swapHandlers({ swap, validator, catalog }),
      launcherInfo: async ({ refresh }) => launcher.info(refresh === true),
    },
    swap,
    catalog,
    launcher,
    async start() {
      await swap.start()
    },
    async stop() {
      await swap.stop()
    },
  }
}
