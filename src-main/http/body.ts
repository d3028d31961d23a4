import type { IncomingMessage } from 'node:http'
import { ApiError } from '../contract/errors'

/** The client left before its request was read; nothing is left to answer. */
export class ClientGone extends Error {
  constructor() {
    super('client went away')
    this.name = 'ClientGone'
  }
}

/** The 413 for a request body over `limit` bytes. */
export function bodyTooLarge(limit: number): ApiError {
  return new ApiError('payload_too_large', `request body is larger than ${limit} bytes`)
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
    return Promise.reject(bodyTooLarge(limit))
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let n = 0
    const onData = (c: Buffer): void => {
      n += c.length
      if (n > limit) {
        req.off('data', onData)
        req.resume()
        reject(bodyTooLarge(limit))
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

/** How deep contract bodies may nest: far beyond any real input, far below a stack overflow. */
export const CONTRACT_JSON_DEPTH = 64

/**
 * Whether JSON text nests arrays and objects deeper than `max`, in one pass over the text.
 * JSON.parse itself copes with any depth, but everything after it that walks the value
 * (validation, serialisation, structured clone) recurses, so depth is refused before parsing.
 */
export function jsonDeeperThan(text: string, max: number): boolean {
  if (text.length <= 2 * max) return false
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c)
        i++ // backslash: skip the escaped character
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return false
}

/** The 400 for a JSON body nested deeper than `maxDepth`. */
export function jsonTooDeep(maxDepth: number): ApiError {
  return new ApiError('bad_input', `the JSON body nests deeper than ${maxDepth} levels`)
}

/** The 400 for a body that is not JSON. */
export function malformedJson(): ApiError {
  return new ApiError('bad_input', 'malformed JSON body')
}

/** Parses a JSON body, refusing nesting deeper than `maxDepth` with a 400 that names the limit. */
export function parseJsonText(text: string, maxDepth: number): unknown {
  if (jsonDeeperThan(text, maxDepth)) throw jsonTooDeep(maxDepth)
  try {
    return JSON.parse(text)
  } catch {
    throw malformedJson()
  }
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
  return parseJsonText(raw.toString('utf8'), CONTRACT_JSON_DEPTH)
}
