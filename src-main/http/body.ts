import type { IncomingMessage } from 'node:http'
import { ApiError } from '../contract/errors'

/** The client left before its request was read; nothing is left to answer. */
export class ClientGone extends Error {
  constructor() {
    super('client went away')
    this.name = 'ClientGone'
  }
}

/**
 * Reads a request body whole, refusing more than `limit` bytes (413). The one reader for every
 * route that takes a body: contract methods, proxied JSON, webhooks (which sign the exact bytes).
 * Uploads stream instead.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? NaN)
  if (declared > limit) {
    req.resume()
    return Promise.reject(new ApiError('payload_too_large', `request body is larger than ${limit} bytes`))
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let n = 0
    const onData = (c: Buffer): void => {
      n += c.length
      if (n > limit) {
        req.off('data', onData)
        req.resume()
        reject(new ApiError('payload_too_large', `request body is larger than ${limit} bytes`))
        return
      }
      chunks.push(c)
    }
    req.on('data', onData)
    req.once('end', () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)))
    req.once('error', reject)
    req.once('close', () => {
      if (!req.complete) reject(new ClientGone())
    })
  })
}

/**
 * Reads a contract method's JSON body, bounded. Any content type but multipart is read as JSON,
 * so `curl -d '{…}'` works without a header; a cross-site form post cannot exploit that because
 * the origin guard refuses cross-origin state changes on every cookie-reachable surface.
 */
export async function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase()
  if (encoding !== 'identity') {
    req.resume()
    throw new ApiError('unsupported_media_type', `content-encoding ${encoding} is not accepted`, { status: 415 })
  }
  if ((req.headers['content-type'] ?? '').toLowerCase().startsWith('multipart/')) {
    req.resume()
    throw new ApiError('unsupported_media_type', 'this method takes a JSON body', { status: 415 })
  }
  const raw = await readBody(req, limit)
  if (raw.length === 0) return undefined
  try {
    return JSON.parse(raw.toString('utf8'))
  } catch {
    throw new ApiError('bad_input', 'malformed JSON body')
  }
}
