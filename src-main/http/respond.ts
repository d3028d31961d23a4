import type { ServerResponse } from 'node:http'
import type { ErrorStyle } from '../contract/define'
import { ApiError } from '../contract/errors'

/** Writes a JSON answer directly (no content negotiation or ETag work on the hot path). */
export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value)
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  })
  res.end(body)
}

/**
 * Writes an error in its surface's shape: control and gateway `{detail, code}`, licensing public
 * `{ok:false, error, message}`. Anything that is not an ApiError is a bare 500 (callers log it).
 * Once headers are out an error can only cut the response.
 */
export function sendError(res: ServerResponse, err: unknown, style: ErrorStyle = 'control'): void {
  const e = err instanceof ApiError ? err : new ApiError('internal', 'internal error')
  if (res.headersSent) {
    res.destroy()
    return
  }
  for (const [k, v] of Object.entries(e.headers)) res.setHeader(k, v)
  const body =
    style === 'licensing' ? { ok: false, error: e.code, message: e.message } : { detail: e.message, code: e.code }
  sendJson(res, e.status, body)
}
