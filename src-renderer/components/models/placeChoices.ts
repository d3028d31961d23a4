import type { PlacementsView } from '../../../src-main/contract/placements'
import { placementName, placementStateLabel } from '../cluster/placementText'
import { bytes, isFit, type FitOrError } from './format'

/** One node in the "Place on…" list: whether it may be picked, and what picking it means. */
export interface NodeChoice {
  name: string
  /** 1 for the head, 2… for the workers, in the order picked; null when not picked. */
  order: number | null
  /** Why it cannot be picked now; null when it can (a picked node can always be unpicked). */
  blocked: string | null
  /** What picking it means: the placement it displaces, that the model does not fit. */
  notes: string[]
  /** The fit estimate on the picked nodes with this one (its own row), or null while it loads. */
  fit: FitOrError | null
}

/** The nodes a fit is asked for to judge `node`: the picked ones, plus it when it is not picked yet. */
export function fitNodesFor(picked: readonly string[], node: string): string[] {
  return picked.includes(node) ? [...picked] : [...picked, node]
}

/** The node's row of a fit estimate, in words, when it does not fit there. */
function noFitNote(fit: FitOrError | null, node: string): string | null {
  if (fit === null) return null
  if (!isFit(fit)) return `cannot run here: ${fit.error}`
  const row = fit.nodes.find((n) => n.node === node)
  if (!row || row.verdict !== 'no_fit') return null
  const others = row.other_bytes ? `, other processes hold ${bytes(row.other_bytes)}` : ''
  return `does not fit: needs ${bytes(row.need_bytes)} of ${bytes(row.budget_bytes)}${others}`
}

/** Why a node cannot be picked (before the fit): unreachable, or the head without a launcher. */
function blockedReason(n: PlacementsView['nodes'][number], wouldBeHead: boolean): string | null {
  if (n.reachable === false) return 'unreachable at the last probe'
  if (wouldBeHead && n.launcher === false)
    return 'no launcher checkout here, and the first node picked is the head, which runs it'
  return null
}

/**
 * Every node of the view as a choice for placing a model on `picked` (head first): blocked with the
 * reason where it is unreachable or would be a head without a launcher; a node taken by another
 * placement stays pickable, since the daemon stops what a placement displaces, and says so.
 */
export function placeChoices(
  view: PlacementsView | null,
  picked: readonly string[],
  fitOf: (nodes: readonly string[]) => FitOrError | null,
): NodeChoice[] {
  const byId = new Map((view?.placements ?? []).map((p) => [p.id, p]))
  return (view?.nodes ?? []).map((n) => {
    const at = picked.indexOf(n.name)
    const fit = fitOf(fitNodesFor(picked, n.name))
    const taken = n.placement_id !== null ? (byId.get(n.placement_id) ?? null) : null
    const notes: string[] = []
    if (n.placement_id !== null)
      notes.push(`taken by ${taken ? placementName(taken) : 'a placement'} (${n.placement_id}): placing here stops it`)
    const noFit = noFitNote(fit, n.name)
    if (noFit !== null) notes.push(noFit)
    return {
      name: n.name,
      order: at >= 0 ? at + 1 : null,
      blocked: at >= 0 ? null : blockedReason(n, picked.length === 0),
      notes,
      fit,
    }
  })
}

/** Why the picked nodes cannot be placed on as they are; null when they can. */
export function pickProblem(view: PlacementsView | null, picked: readonly string[]): string | null {
  if (picked.length === 0) return 'pick at least one node'
  const nodes = new Map((view?.nodes ?? []).map((n) => [n.name, n]))
  const head = nodes.get(picked[0]!)
  if (head?.launcher === false) return `the head (${picked[0]}) has no launcher checkout: pick a node with one first`
  const down = picked.filter((p) => nodes.get(p)?.reachable === false)
  return down.length > 0 ? `${down.join(', ')} ${down.length > 1 ? 'are' : 'is'} unreachable` : null
}

/** The placements picking these nodes stops, in words ("Qwen (node1)"). */
export function displacedBy(view: PlacementsView | null, picked: readonly string[]): string[] {
  const ids = new Set(
    (view?.nodes ?? []).filter((n) => picked.includes(n.name) && n.placement_id !== null).map((n) => n.placement_id!),
  )
  const byId = new Map((view?.placements ?? []).map((p) => [p.id, p]))
  return [...ids].map((id) => {
    const p = byId.get(id)
    return p ? `${placementName(p)} (${id})` : id
  })
}

/**
 * Where the catalog model already runs ("node3 (ready), node4+node5 (lost: node5 is unreachable)"),
 * empty when nowhere: placing it again adds a copy, and the gateway sends each request to the least
 * busy copy that answers.
 */
export function runsAlready(view: PlacementsView | null, key: string): string[] {
  return (view?.placements ?? [])
    .filter((p) => p.key === key)
    .map((p) => `${p.id} (${placementStateLabel(p.state)}${p.reason ? `: ${p.reason}` : ''})`)
}
