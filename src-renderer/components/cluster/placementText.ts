import type { Placement, PlacementsView } from '../../../src-main/contract/placements'

/** A placement's nodes in the operator's words: "node2, solo" or "node1+node2, tensor parallel 2". */
export function placementNodesText(nodes: readonly string[]): string {
  return nodes.length === 1 ? `${nodes[0]}, solo` : `${nodes.join('+')}, tensor parallel ${nodes.length}`
}

/** The name a placement is shown by: its served name, with the catalog key when that differs. */
export function placementName(p: Pick<Placement, 'key' | 'served'>): string {
  return p.key === null || p.key === p.served ? p.served : `${p.served} (${p.key})`
}

const STATE: Record<Placement['state'], { label: string; cls: string }> = {
  ready: { label: 'ready', cls: 'badge ok' },
  loading: { label: 'loading', cls: 'badge warn' },
  lost: { label: 'lost', cls: 'badge bad' },
  unknown: { label: 'found running', cls: 'badge' },
}

export function placementStateLabel(s: Placement['state']): string {
  return STATE[s].label
}
export function placementStateClass(s: Placement['state']): string {
  return STATE[s].cls
}

/** The running job's words for a node it touches: what it places or stops there; null when none. */
export function changingOn(view: PlacementsView | null, node: string): string | null {
  const c = view?.changing ?? null
  if (c === null) return null
  const own = c.id.split('+').includes(node)
  const displaced = c.displaces.some((id) => id.split('+').includes(node))
  if (!own && !displaced) return null
  if (c.action === 'stop') return `stopping ${c.id}`
  const what = c.key ?? 'a model'
  return own ? `placing ${what} on ${c.id} (${c.phase})` : `stopping this placement to place ${what} on ${c.id}`
}
