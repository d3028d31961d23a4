import { createHash } from 'node:crypto'
import { LoopbackServer } from './loopback'

/**
 * A loopback OpenAI-compatible embeddings server: `POST /v1/embeddings` answers a deterministic
 * unit vector per input (hashed words), so texts sharing words land near each other.
 */
export const EMBEDDING_DIM = 64

export function embed(text: string, dim = EMBEDDING_DIM): number[] {
  const v = new Array<number>(dim).fill(0)
  for (const w of text.toLowerCase().split(/\W+/).filter(Boolean)) {
    const h = createHash('sha256').update(w).digest()
    v[h[0]! % dim]! += 1
    v[h[1]! % dim]! += 0.5
  }
  const n = Math.hypot(...v) || 1
  return v.map((x) => x / n)
}

export function startFakeEmbeddings(): Promise<LoopbackServer> {
  return new LoopbackServer((req) => {
    if (req.method !== 'POST' || req.path !== '/v1/embeddings')
      return { status: 404, body: { error: { message: 'not found' } } }
    let body: { input?: unknown; model?: unknown }
    try {
      body = JSON.parse(req.body) as typeof body
    } catch {
      return { status: 400, body: { error: { message: 'malformed JSON' } } }
    }
    const inputs = Array.isArray(body.input) ? body.input : [body.input]
    if (inputs.some((t) => typeof t !== 'string'))
      return { status: 400, body: { error: { message: 'input must be text' } } }
    return {
      status: 200,
      body: {
        object: 'list',
        data: inputs.map((t, index) => ({ object: 'embedding', index, embedding: embed(String(t)) })),
        model: typeof body.model === 'string' ? body.model : 'sim-embed',
        usage: { prompt_tokens: inputs.length, total_tokens: inputs.length },
      },
    }
  }).start()
}
