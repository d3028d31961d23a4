import type { Handlers } from '../contract/define'
import type { servicesContract } from '../contract/services'
import type { CoreDeps } from '../platform/domainModule'
import type { ServiceDirectory } from '../cluster/serviceDirectory'
import type { LauncherProbe, SwapStatus } from '../models/types'
import type { NodesModule } from '../nodes/module'
import { UpdateApplier } from './apply'
import { LauncherCheckout } from './checkout'
import { UpdateExplainer } from './explain'

export type UpdatesHandlers = Pick<Handlers<typeof servicesContract>, 'getUpdates' | 'applyUpdates' | 'explainUpdates'>

export interface UpdatesDeps extends CoreDeps {
  readonly nodes: Pick<NodesModule, 'pool' | 'targets'>
  readonly services: ServiceDirectory
  /** The models domain's swap manager: what is loaded, and whether a swap holds the llm. */
  readonly swap: SwapStatus
  /** The launcher as the models domain read it: forgotten when an update changes the checkout. */
  readonly launcher: Pick<LauncherProbe, 'invalidate'>
}

export interface UpdatesModule {
  readonly name: 'updates'
  readonly handlers: UpdatesHandlers
}

/** Upstream launcher updates: the checkout's status, the apply job, and the llm's explanation. */
export function createUpdatesModule(deps: UpdatesDeps): UpdatesModule {
  const logger = deps.logger.child('updates')
  const { pool, targets } = deps.nodes
  const checkout = new LauncherCheckout({
    pool,
    node1: targets.node1,
    launcherDir: deps.config.llm.launcherDir,
    clock: deps.clock,
    logger,
  })
  const swapBusy = (): boolean => deps.swap.busy()
  const applier = new UpdateApplier({
    checkout,
    pool,
    peer: targets.node2,
    jobs: deps.jobs,
    logger,
    swapBusy,
    checkoutChanged: () => deps.launcher.invalidate(),
  })
  const explainer = new UpdateExplainer({
    checkout,
    pool,
    llmBaseUrl: () => deps.services.role('llm').baseUrl,
    loaded: () => deps.swap.loaded(),
    swapBusy,
    logger,
  })
  return {
    name: 'updates',
    handlers: {
      getUpdates: async (_in, ctx) => checkout.status(ctx.signal),
      applyUpdates: async () => applier.start(),
      explainUpdates: (_in, ctx) => explainer.open(ctx.signal),
    },
  }
}
