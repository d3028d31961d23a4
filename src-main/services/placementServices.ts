import type { Config } from '../config/load'
import type { Placement } from '../contract/placements'
import type { ServicePlacement } from '../contract/nodes'
import { serviceBase, type RoleLocation } from '../cluster/serviceDirectory'
import type { SshTarget } from '../ssh/pool'
import { placementSubject, type PlacementSubject } from './deepHealthHook'
import type { PlacementServices } from './types'

/** Where a placement's engine runs: the llm container on its head, at LLM_PORT. */
export interface PlacementEngineLocation {
  readonly name: PlacementSubject
  readonly placement: ServicePlacement
  /** The head's SSH target; null when the head is no longer configured. */
  readonly ssh: SshTarget | null
  readonly container: string
  readonly port: number
  readonly baseUrl: string | null
}

/** The id of the placement a service name stands for (`llm@node2` → `node2`), or null for any other service. */
export function placementIdOf(name: string): string | null {
  return name.startsWith('llm@') ? name.slice(4) : null
}

/** The placements that are services of their own: every one but the one including node1 (that is the llm), by id. */
export function placementRows(placements: PlacementServices | undefined): Placement[] {
  return (placements?.all() ?? [])
    .filter((p) => placementSubject(p.id) !== 'llm')
    .sort((a, b) => a.id.localeCompare(b.id, 'en', { numeric: true }))
}

/** A placement's engine as a service: named as deep health names it, reached where the gateway reaches it. */
export function placementEngineAt(
  p: Placement,
  nodes: Config['nodes'],
  llm: Pick<RoleLocation, 'container' | 'port'>,
): PlacementEngineLocation {
  const ssh = nodes[p.head] ?? null
  return {
    name: `llm@${p.id}`,
    placement: { id: p.id, key: p.key, served: p.served, nodes: p.nodes, state: p.state },
    ssh,
    container: llm.container,
    port: llm.port,
    baseUrl: serviceBase(ssh?.host, llm.port),
  }
}
