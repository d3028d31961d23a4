import type http from 'node:http'
import { ApiError } from '../../contract/errors'
import { describeNetError } from '../../lib/httpClient'
import type { Upstream } from './upstreams'
import { upstreamDetail } from './wire'

/** What an upstream's answers and failures mean for the client of a relayed call, and the call's fixed headers. */

/** Bytes of an upstream error body kept for the client's error answer. */
export const ERROR_BODY_LIMIT = 64 * 1024

/** Upstream headers an event stream's own headers replace. */
export const SSE_REPLACED = ['content-length', 'content-type', 'cache-control', 'x-accel-buffering']

/** A relayed call's headers besides host and length, one set per kind. */
export const JSON_CALL_HEADERS = { 'content-type': 'application/json', accept: 'application/json' }
export const STREAM_CALL_HEADERS = { 'content-type': 'application/json', accept: 'text/event-stream' }

/** An event stream's own headers. */
export const SSE_HEADERS: http.OutgoingHttpHeaders = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
}

/**
 * What an upstream's failure means for the client, by undici's error codes: no head in time is a
 * 504; an answer that is not valid HTTP or a body that stalls is the upstream's fault (502); a
 * connection lost before the head is `upstream_unreachable`, after it a cut answer.
 */
export function upstreamFault(up: Upstream, err: Error, midAnswer: boolean): ApiError {
  const code = (err as NodeJS.ErrnoException).code ?? ''
  if (code === 'UND_ERR_HEADERS_TIMEOUT')
    return new ApiError('upstream_timeout', `${up.label} sent no answer head in time`, { status: 504 })
  if (code === 'UND_ERR_BODY_TIMEOUT')
    return new ApiError('upstream_error', `${up.label} stopped sending mid-answer`, { status: 502 })
  if (code.startsWith('HPE_') || code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH')
    return new ApiError('upstream_error', `${up.label} sent a malformed HTTP answer: ${err.message}`, { status: 502 })
  if (midAnswer)
    return new ApiError('upstream_error', `${up.label} closed the connection before the answer was complete`, {
      status: 502,
    })
  return new ApiError('upstream_unreachable', `${up.label} is unreachable at ${up.base}: ${describeNetError(err)}`)
}

/** True when a body is already OpenAI's error shape: a JSON object with an `error` object. */
export function hasErrorObject(text: string): boolean {
  try {
    const v = JSON.parse(text) as { error?: unknown }
    return v !== null && typeof v === 'object' && v.error !== null && typeof v.error === 'object'
  } catch {
    return false
  }
}

/** The upstream's error as an OpenAI-style `{error: {...}}` object (the shape the openai client raises). */
export function errorEventData(status: number, text: string, upstream: string): string {
  // Re-serialised: an SSE data line must not contain the body's own line breaks.
  if (hasErrorObject(text)) return JSON.stringify(JSON.parse(text))
  return JSON.stringify({
    error: {
      message: `${upstream} answered HTTP ${status}: ${upstreamDetail(text)}`,
      type: 'upstream_error',
      code: status,
    },
  })
}
