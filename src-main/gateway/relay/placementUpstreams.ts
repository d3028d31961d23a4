import { ApiError } from '../../contract/errors'
import { placementSubject, type PlacementSubject } from '../../services/types'
import type { ModelRouter, PlacementRoute } from '../../models/types'
import { openUpstream, type Upstream, type UpstreamTimeouts } from './upstreams'

/** How often pools of origins no placement has any more are looked for, when no new origin prompts it. */
export const POOL_SWEEP_MS = 30_000

/**
 * Where the llm routes go (docs/placements.md, Routing): the models domain's router picks the
 * placement serving a request's `model`, and this keeps one undici pool per placement engine's
 * origin. A pool is made on the first request to its origin and closed (its calls in flight
 * finish first) once no placement has that origin: at most the placed origins plus the one just
 * made are open, because making one sweeps the others.
 */
export class PlacementUpstreams {
  private readonly byBase = new Map<string, Upstream>()
  /** Requests in flight per placement: a model placed several times goes to its least busy copy. */
  private readonly inFlight = new Map<string, number>()

  constructor(
    readonly router: ModelRouter,
    private readonly timeouts: UpstreamTimeouts,
    /** Deep health's probe of one placement (in the background; never awaited). */
    private readonly probe?: (subject: PlacementSubject, reason: string) => unknown,
  ) {}

  /**
   * A relayed call to a placement's engine failed (5xx, unreachable, cut): deep health probes that
   * placement. Not node1's: that is the llm service, whose probes come from its rounds and status checks as before.
   */
  failed(routeId: string, reason: string): void {
    // The engines are looked at again now: a dead copy stops taking requests within a look.
    this.router.relook?.(routeId)
    const subject = placementSubject(routeId)
    if (subject === 'llm') return
    try {
      this.probe?.(subject, reason)
    } catch {
      // A probe that cannot be asked for must not fail the request: the next round probes it anyway.
    }
  }

  /** The least busy of the copies that answer (the first of those tied). */
  pick(routes: readonly PlacementRoute[]): PlacementRoute {
    let best = routes[0] as PlacementRoute
    let least = Infinity
    for (const r of routes) {
      const n = this.inFlight.get(r.id) ?? 0
      if (n < least) {
        best = r
        least = n
      }
    }
    return best
  }

  /** Requests in flight on a placement now (held, streaming): one still busy is not unloaded for idleness. */
  inFlightOf(routeId: string): number {
    return this.inFlight.get(routeId) ?? 0
  }

  /** A request went to a placement (counted until `end`). */
  begin(routeId: string): void {
    this.inFlight.set(routeId, (this.inFlight.get(routeId) ?? 0) + 1)
  }

  end(routeId: string): void {
    const n = (this.inFlight.get(routeId) ?? 1) - 1
    if (n <= 0) this.inFlight.delete(routeId)
    else this.inFlight.set(routeId, n)
  }

  /** The upstream of a placement's engine; its pool is made on first use. */
  upstream(route: PlacementRoute): Upstream {
    const known = this.byBase.get(route.baseUrl)
    if (known !== undefined) return known
    // Errors name the engine by its head: "llm on node3 is unreachable at http://…".
    const up = openUpstream('llm', engineBase(route), this.timeouts, `llm on ${route.id.split('+')[0]}`)
    this.byBase.set(route.baseUrl, up)
    this.sweep(route.baseUrl)
    return up
  }

  /** Closes the pools whose origin no placement has (except `keep`, the one a request is about to use). */
  sweep(keep?: string): void {
    if (this.byBase.size === 0) return
    const live = new Set<string>()
    for (const r of this.router.placed()) live.add(r.baseUrl)
    for (const [base, up] of this.byBase) {
      if (base === keep || live.has(base)) continue
      this.byBase.delete(base)
      up.pool.close().catch(() => undefined)
    }
  }

  /** Pools open now (tests and the bench check the bound). */
  get pools(): number {
    return this.byBase.size
  }

  destroy(): void {
    for (const up of this.byBase.values()) up.pool.destroy().catch(() => undefined)
    this.byBase.clear()
  }
}

/** The route's engine address, refused (503) unless it is an http(s) URL: it becomes a connection target. */
function engineBase(route: PlacementRoute): string {
  const url = URL.canParse(route.baseUrl) ? new URL(route.baseUrl) : null
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.username !== '')
    throw new ApiError('unavailable', `placement ${route.id} has no usable engine address`)
  return route.baseUrl.replace(/\/+$/, '')
}

/** A placement serving `model` (any id its engine lists, or its catalog key) among those that answer, or null. */
export function placedRoute(router: ModelRouter, model: string | null): PlacementRoute | null {
  if (model === null) return null
  for (const r of router.placed()) if (r.served === model || r.key === model || r.names?.includes(model)) return r
  return null
}
