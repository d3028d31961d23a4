import { z } from 'zod'
import { ApiError } from '../../contract/errors'
import type { Upstream } from './upstreams'
import { upstreamJson, UpstreamStatus, UpstreamUnreachable } from './wire'

/** A collection name: a whitelist free of shell and URL metacharacters (spec 1, 4.10). */
export const COLLECTION = /^[A-Za-z0-9_-]{1,64}$/

/** The embeddings path under EMBEDDINGS_URL: `/v1/embeddings`, or `/embeddings` when the URL already ends in `/v1`. */
export function embeddingsPath(base: string): string {
  return /\/v1$/.test(base) ? '/embeddings' : '/v1/embeddings'
}

const Embedding = z.object({ data: z.array(z.object({ embedding: z.array(z.number()).min(1) })).min(1) })
const QdrantHits = z.object({
  result: z.array(
    z.object({
      id: z.union([z.string(), z.number()]),
      score: z.number(),
      payload: z.record(z.string(), z.unknown()).nullable().optional(),
    }),
  ),
})

export interface SearchInput {
  collection: string
  query: string
  limit: number
  model?: string
}

export interface SearchHit {
  id: string | number
  score: number
  payload: Record<string, unknown> | null
}

/** Embeds the query through the embeddings upstream, then searches the Qdrant-compatible store. */
export async function search(
  embeddings: Upstream,
  vector: Upstream,
  input: SearchInput,
  signal: AbortSignal,
): Promise<SearchHit[]> {
  // Checked here too: the path segment below must never carry anything but the whitelist.
  if (!COLLECTION.test(input.collection)) throw new ApiError('bad_input', 'collection must match ^[A-Za-z0-9_-]{1,64}$')
  const embedBody: Record<string, unknown> = { input: input.query }
  if (input.model) embedBody.model = input.model
  const vec = await wrap(embeddings, async () => {
    const { value } = await upstreamJson(embeddings, {
      method: 'POST',
      path: embeddingsPath(embeddings.base),
      headers: { 'content-type': 'application/json' },
      body: Buffer.from(JSON.stringify(embedBody)),
      signal,
    })
    const e = Embedding.safeParse(value)
    if (!e.success) throw new ApiError('upstream_error', 'embeddings upstream answered without data[0].embedding')
    return e.data.data[0]!.embedding
  })
  return wrap(vector, async () => {
    const { value } = await upstreamJson(vector, {
      method: 'POST',
      path: `/collections/${encodeURIComponent(input.collection)}/points/search`,
      headers: { 'content-type': 'application/json' },
      body: Buffer.from(JSON.stringify({ vector: vec, limit: input.limit, with_payload: true })),
      signal,
    })
    const hits = QdrantHits.safeParse(value)
    if (!hits.success) throw new ApiError('upstream_error', 'vector store answered without result[]')
    return hits.data.result.map((h) => ({ id: h.id, score: h.score, payload: h.payload ?? null }))
  })
}

async function wrap<T>(up: Upstream, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    if (err instanceof UpstreamUnreachable) throw new ApiError('upstream_unreachable', err.message)
    if (err instanceof UpstreamStatus) {
      if (err.status === 404 && up.name === 'vector') throw new ApiError('not_found', `vector store: ${err.detail}`)
      throw new ApiError('upstream_error', `${up.name} answered HTTP ${err.status}: ${err.detail}`)
    }
    throw err
  }
}
