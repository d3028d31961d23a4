import { ApiError } from '../../src-main/contract/errors'
import type { ModelRouter, PlacementRoute } from '../../src-main/models/types'

/**
 * A ModelRouter over a fixed list of placements, for gateway tests and benches: `model` matches a
 * route's served name, then its catalog key; null goes to the first route. A placement can be
 * marked lost (503 with Retry-After) or held (admit waits until it is released).
 */
export class FakeRouter implements ModelRouter {
  readonly lost = new Set<string>()
  private readonly holds = new Map<string, { wait: Promise<void>; release: () => void }>()
  /** Calls of admit (routeNow answered the others). */
  admitted = 0

  constructor(public routes: PlacementRoute[]) {}

  private find(model: string | null): PlacementRoute | undefined {
    return this.copies(model)[0]
  }

  /** Every route serving `model` by served name, else by catalog key (null: the first route). */
  private copies(model: string | null): PlacementRoute[] {
    if (model === null) return this.routes.slice(0, 1)
    const named = this.routes.filter((r) => r.served === model)
    return named.length > 0 ? named : this.routes.filter((r) => r.key === model)
  }

  async admit(model: string | null, signal: AbortSignal): Promise<readonly PlacementRoute[]> {
    this.admitted++
    const route = this.find(model)
    if (route === undefined)
      throw new ApiError(
        'model_not_found',
        `the model '${model}' is not placed; placed: ${this.placed()
          .map((r) => r.served)
          .join(', ')}`,
        { status: 404, param: 'model' },
      )
    const hold = this.holds.get(route.id)
    if (hold !== undefined)
      await Promise.race([
        hold.wait,
        new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
      ])
    if (this.lost.has(route.id))
      throw new ApiError('placement_lost', `placement ${route.id} lost a node; retry later`, {
        status: 503,
        headers: { 'Retry-After': '30' },
      })
    return [route]
  }

  /** The copies of `model` not lost, when none is held. */
  routeNow(model: string | null): readonly PlacementRoute[] | null {
    const copies = this.copies(model).filter((r) => !this.lost.has(r.id))
    if (copies.length === 0 || copies.some((r) => this.holds.has(r.id))) return null
    return copies
  }

  placed(): readonly PlacementRoute[] {
    return this.routes.filter((r) => !this.lost.has(r.id))
  }

  /** Requests for this placement wait in admit until `release` is called. */
  hold(id: string): () => void {
    let release!: () => void
    const wait = new Promise<void>((r) => (release = r))
    this.holds.set(id, { wait, release })
    return () => {
      this.holds.delete(id)
      release()
    }
  }
}
