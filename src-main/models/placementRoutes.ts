import { ApiError } from '../contract/errors'
import type { Placement } from '../contract/placements'
import type { NodeName } from '../contract/schemas'
import type { PlacementRoute } from './types'

/**
 * Routing on what the engines say (docs/guide/gateway.md, Routing): which placements serve a
 * request's `model`, which of them answer now, and the answers when none does.
 */

/** What routing reads of the placements: each engine's origin and the ids it listed at its last look. */
export interface EngineView {
  readonly baseOf: (head: NodeName) => string | null
  readonly namesOf: (base: string | null) => readonly string[] | null
}

/** What a request to a placement that has no answering copy is told to wait before trying again. */
export const NO_COPY_RETRY_S = 30

/** Whether a placement serves `model`: its engine lists that id, or it is its served name or catalog key. */
export function serves(p: Placement, model: string, view: EngineView): boolean {
  if (p.served === model || p.key === model) return true
  return view.namesOf(view.baseOf(p.head))?.includes(model) === true
}

/** Whether a placement's engine answered its last look serving the placement's model. */
export function answers(p: Placement, view: EngineView): boolean {
  return view.namesOf(view.baseOf(p.head))?.includes(p.served) === true
}

/** Where a placement's requests go, with every id its engine lists; null when its head has no address. */
export function routeOf(p: Placement, view: EngineView): PlacementRoute | null {
  const baseUrl = view.baseOf(p.head)
  if (baseUrl === null) return null
  const names = view.namesOf(baseUrl) ?? [p.served]
  return { id: p.id, baseUrl, served: p.served, key: p.key, names }
}

/**
 * The default route (spec 1, 4.9: "forwarded to the llm on node1"): a model no placement serves, or
 * none, goes to node1's engine as it is, and the engine answers for itself. 503 naming the settings
 * when node1 is not configured.
 */
export function node1Route(node1: Placement | undefined, base: string | null, hint: string | null): PlacementRoute {
  if (base === null)
    throw new ApiError('unavailable', hint ?? 'llm is not configured: set NODE1_HOST and NODE1_USER', { status: 503 })
  return { id: node1?.id ?? 'node1', baseUrl: base, served: node1?.served ?? '', key: node1?.key ?? null }
}

/** 503 with Retry-After: every copy of the model is silent (none on node1, whose llm is tried anyway). */
export function noCopyAnswers(model: string, copies: readonly Placement[]): ApiError {
  const why = copies.map((p) => `${p.id}: ${p.reason ?? `the engine on ${p.head} does not answer`}`).join('; ')
  const where = copies.length > 1 ? `${copies.length} placements` : copies[0]?.id
  return new ApiError(
    'placement_unavailable',
    `${model} is placed on ${where}, and none answers now (${why}); retry later`,
    {
      status: 503,
      headers: { 'Retry-After': String(NO_COPY_RETRY_S) },
    },
  )
}
