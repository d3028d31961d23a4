import type { IncomingMessage } from 'node:http'
import { ApiError } from '../contract/errors'

/**
 * Reads a contract method's JSON body, bounded. Any content type but multipart is read as JSON,
 * so `curl -d '{…}'` works without a header; a cross-site form post cannot exploit that because
 * the origin guard refuses cross-origin state changes on every cookie-reachable surface.
 */
export function readJsonBody(req: IncomingMessage, limitBytes: number): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? NaN)
  if (declared > limitBytes) {
    req.resume()
    return Promise.reject(new ApiError('payload_too_large', `body larger than ${limitBytes} bytes`))
  }
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase()
  if (encoding !== 'identity') {
    req.resume()
    return Promise.reject(
      new ApiError('unsupported_media_type', `content-encoding ${encoding} is not accepted`, { status: 415 }),
    )
  }
  if ((req.headers['content-type'] ?? '').toLowerCase().startsWith('multipart/')) {
    req.resume()
    return Promise.reject(new ApiError('unsupported_media_type', 'this method takes a JSON body', { status: 415 }))
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    let failed = false
    req.on('data', (chunk: Buffer) => {
      if (failed) return
      size += chunk.length
      if (size > limitBytes) {
        failed = true
        reject(new ApiError('payload_too_large', `body larger than ${limitBytes} bytes`))
        return
      }
      chunks.push(chunk)
    })
    req.on('error', (err) => {
      failed = true
      reject(err)
    })
    req.on('end', () => {
      if (failed) return
      if (size === 0) return resolve(undefined)
      const text = (chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)).toString('utf8')
      try {
        resolve(JSON.parse(text))
      } catch {
        reject(new ApiError('bad_input', 'malformed JSON body'))
      }
    })
  })
}
