import type { gatewayContract } from '../contract/gateway'
import type { CoreDeps, DomainModule } from '../core/module'
import type { NodesModule } from '../nodes/module'

export type GatewayModule = DomainModule<typeof gatewayContract>

/** Composition of the /v1 proxy, speech, transcription, diarization, redaction, embeddings and search. */
export async function createGatewayModule(_deps: CoreDeps & { nodes: NodesModule }): Promise<GatewayModule> {
  return { name: 'gateway', handlers: {} }
}
