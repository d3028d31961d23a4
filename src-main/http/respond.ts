import type { ServerResponse } from 'node:http'
import type { ErrorStyle } from '../contract/define'
import { ApiError } from '../contract/errors'

/** Writes a JSON answer directly (no content negotiation or ETag work on the hot path). */
export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value)
  res.writeHead(status, [
    'Content-Type',
    'application/json; charset=utf-8',
    'Content-Length',
    String(Buffer.byteLength(body)),
  ])
  res.end(body)
}

/**
 * OpenAI's error `type` for a status, so the official clients pick the right exception class; an
 * unknown model is OpenAI's own `invalid_request_error` with code `model_not_found`, a spent quota
 * its `insufficient_quota`.
 */
function openAiType(status: number, code: string): string {
  if (code === 'model_not_found') return 'invalid_request_error'
  if (code === 'insufficient_quota') return 'insufficient_quota'
  if (status === 401) return 'authentication_error'
  if (status === 403) return 'permission_error'
  if (status === 404) return 'not_found_error'
  if (status === 429) return 'rate_limit_error'
  if (status >= 500) return 'api_error'
  return 'invalid_request_error'
}

function errorBody(e: ApiError, style: ErrorStyle): unknown {
  if (style === 'licensing') return { ok: false, error: e.code, message: e.message }
  if (style === 'openai')
    return {
      error: { message: e.message, type: openAiType(e.status, e.code), code: e.code, param: e.param ?? null },
      detail: e.message,
    }
  return { detail: e.message, code: e.code }
}

/**
 * Writes an error in its surface's shape (see ErrorStyle). Anything that is not an ApiError is a
 * bare 500 (callers log it). Once headers are out an error can only cut the response.
 */
export function sendError(res: ServerResponse, err: unknown, style: ErrorStyle = 'control'): void {
  const e = err instanceof ApiError ? err : new ApiError('internal', 'internal error')
  if (res.headersSent) {
    res.destroy()
    return
  }
  for (const [k, v] of Object.entries(e.headers)) res.setHeader(k, v)
  sendJson(res, e.status, errorBody(e, style))
}
