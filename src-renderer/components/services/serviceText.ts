import type { ServicePlacement } from '../../../src-main/contract/nodes'
import { placementName, placementNodesText } from '../cluster/placementText'

/** What a placement's engine serves and where, in the placements' own words: "Qwen/Qwen3-32B (qwen3-32b) on node2, solo". */
export function placementServiceText(p: ServicePlacement): string {
  return `${placementName(p)} on ${placementNodesText(p.nodes)}`
}

/** The restart question: a placement's engine is placed again on its nodes, a container is restarted. */
export function restartQuestion(name: string, placement: ServicePlacement | null, plain = `Restart ${name}?`): string {
  if (placement === null) return plain
  return `Restart ${name}? ${placementName(placement)} is placed again on ${placementNodesText(placement.nodes)}; requests to it wait until it is back.`
}
