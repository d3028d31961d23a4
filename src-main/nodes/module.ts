import type { nodesContract } from '../contract/nodes'
import type { CoreDeps, DomainModule } from '../core/module'

export type NodesModule = DomainModule<typeof nodesContract>

/** Composition of the SSH pool, hardware probes, connectivity store and Wake-on-LAN. */
export async function createNodesModule(_deps: CoreDeps): Promise<NodesModule> {
  return { name: 'nodes', handlers: {} }
}
