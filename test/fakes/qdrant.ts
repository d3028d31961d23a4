import { LoopbackServer } from './loopback'

/**
 * A loopback Qdrant-compatible vector store: collections of points in memory and
 * `POST /collections/{name}/points/search` by cosine similarity. `requests` keeps every raw path
 * as received, so tests can prove nothing unsafe was forwarded.
 */
export interface Point {
  id: string | number
  vector: number[]
  payload?: Record<string, unknown>
}

export class FakeQdrant extends LoopbackServer {
  readonly collections = new Map<string, Point[]>()

  constructor() {
    super((req) => {
      const m = /^\/collections\/([^/?]+)\/points\/search$/.exec(req.path)
      if (req.method !== 'POST' || !m) return { status: 404, body: { status: { error: `Not found: ${req.path}` } } }
      const name = decodeURIComponent(m[1]!)
      const points = this.collections.get(name)
      if (!points)
        return { status: 404, body: { status: { error: `Not found: Collection \`${name}\` doesn't exist!` }, time: 0 } }
      let q: { vector?: number[]; limit?: number; with_payload?: boolean }
      try {
        q = JSON.parse(req.body) as typeof q
      } catch {
        return { status: 400, body: { status: { error: 'malformed JSON' } } }
      }
      const v = q.vector ?? []
      const result = points
        .map((p) => ({
          id: p.id,
          version: 0,
          score: cosine(p.vector, v),
          payload: q.with_payload ? (p.payload ?? {}) : null,
        }))
        .sort((a, b) => b.score - a.score)
        .slice(0, q.limit ?? 10)
      return { status: 200, body: { result, status: 'ok', time: 0.0001 } }
    })
  }
}

function cosine(a: number[], b: number[]): number {
  let dot = 0
  let na = 0
  let nb = 0
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    dot += a[i]! * b[i]!
    na += a[i]! ** 2
    nb += b[i]! ** 2
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0
}

export function startFakeQdrant(): Promise<FakeQdrant> {
  return new FakeQdrant().start()
}
