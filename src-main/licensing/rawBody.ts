import type { Request } from 'express'
import { ApiError } from '../contract/errors'

/**
 * Reads a request body ourselves, up to `limit` bytes: the webhook and page routes get the
 * request unparsed (BTCPay signs the exact bytes), so nothing else has consumed it.
 */
export async function readRawBody(req: Request, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > limit) throw new ApiError('payload_too_large', `body larger than ${limit} bytes`)
    chunks.push(chunk)
  }
  return Buffer.concat(chunks)
}
