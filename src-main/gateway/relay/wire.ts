import type http from 'node:http'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import {
  describeNetError,
  HttpUnreachable,
  readBody,
  sendRequest,
  type AnswerHeaders,
  type HttpAnswer,
} from '../../lib/httpClient'
import { ApiError } from '../../contract/errors'
import { parseJsonText } from '../../http/body'
import type { Upstream } from './upstreams'

/** Low-level HTTP plumbing shared by every gateway route: JSON bodies and upstream calls. */

export const MiB = 1024 * 1024

/** Deep enough for any tool or response-format JSON schema a client sends to the llm. */
export const GATEWAY_JSON_DEPTH = 256

/** The 400 for a JSON body that is not an object. */
export function notAnObject(): ApiError {
  return new ApiError('bad_input', 'request body must be a JSON object')
}

/** Parses a JSON object body: 400 for anything else, before any upstream is called. */
export function parseJsonObject(raw: Buffer): Record<string, unknown> {
  const v = parseJsonText(raw.toString('utf8'), GATEWAY_JSON_DEPTH)
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw notAnObject()
  return v as Record<string, unknown>
}

/** What the relay reads of a chat, completion or embeddings request; its bytes go upstream as they are. */
export interface RelayRequest {
  /** `model` when it is a string (what a key's model list and the swap gate compare); null otherwise. */
  readonly model: string | null
  /** `stream` is `true`. */
  readonly stream: boolean
  /** `stream_options` as sent; undefined when absent. */
  readonly streamOptions: unknown
}

/**
 * Reads what the relay needs of a body (its bytes go upstream as they came), with the same 400s as
 * parseJsonObject. On the main thread: the relay sends large bodies to RelayBodyParser's worker.
 */
export function readRelayRequest(raw: Buffer): RelayRequest {
  const v = parseJsonObject(raw)
  return {
    model: typeof v.model === 'string' ? v.model : null,
    stream: v.stream === true,
    streamOptions: v.stream_options,
  }
}

export interface UpstreamCall {
  readonly method: 'GET' | 'POST'
  readonly path: string
  readonly headers?: Readonly<Record<string, string | number | undefined>>
  /** A Buffer is sent with its length; a stream is piped with backpressure. */
  readonly body?: Buffer | Readable
  readonly signal?: AbortSignal
}

/** The error when the upstream could not be reached at all (connect refused, DNS, reset before a response). */
export class UpstreamUnreachable extends Error {
  constructor(
    readonly upstream: Upstream,
    readonly netError: Error,
  ) {
    super(`${upstream.name} is unreachable at ${upstream.base}: ${describeNetError(netError)}`)
    this.name = 'UpstreamUnreachable'
  }
}

/** Sends one request to an upstream's pool; resolves with its answer as soon as the head arrives. */
export async function callUpstream(up: Upstream, call: UpstreamCall): Promise<HttpAnswer> {
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(call.headers ?? {}))
    if (value !== undefined) headers[name.toLowerCase()] = String(value)
  try {
    return await sendRequest(up.pool, {
      path: up.basePath + call.path,
      method: call.method,
      headers,
      body: call.body,
      signal: call.signal,
    })
  } catch (err) {
    throw err instanceof HttpUnreachable ? new UpstreamUnreachable(up, err.netError) : err
  }
}

/** Reads at most `limit` bytes of an upstream body as text (error bodies, small JSON); the rest is read and dropped. */
export async function readText(answer: HttpAnswer, limit = 64 * 1024): Promise<string> {
  return (await readBody(answer, limit, { truncate: true })).toString('utf8')
}

/** The human part of an upstream error body: `detail`, `error.message`, `message`, or the text itself. */
export function upstreamDetail(text: string): string {
  try {
    const v = JSON.parse(text) as { detail?: unknown; error?: unknown; message?: unknown }
    if (typeof v.detail === 'string') return v.detail
    if (v.error && typeof v.error === 'object' && typeof (v.error as { message?: unknown }).message === 'string')
      return (v.error as { message: string }).message
    if (typeof v.error === 'string') return v.error
    if (typeof v.message === 'string') return v.message
  } catch {
    // not JSON: use the text
  }
  const t = text.trim().replace(/\s+/g, ' ')
  return t.length > 300 ? `${t.slice(0, 300)}…` : t || '(empty body)'
}

/** Calls an upstream and parses its JSON answer; non-2xx becomes an error carrying status and detail. */
export async function upstreamJson<T = unknown>(
  up: Upstream,
  call: UpstreamCall,
  limit = 32 * MiB,
): Promise<{ status: number; value: T }> {
  const res = await callUpstream(up, call)
  const text = await readText(res, limit)
  const status = res.status
  if (status < 200 || status >= 300) throw new UpstreamStatus(up, status, upstreamDetail(text))
  try {
    return { status, value: JSON.parse(text) as T }
  } catch {
    throw new UpstreamStatus(up, 502, `${up.name} answered with invalid JSON`)
  }
}

/** An upstream answered, but not with success. */
export class UpstreamStatus extends Error {
  constructor(
    readonly upstream: Upstream,
    readonly status: number,
    readonly detail: string,
  ) {
    super(`${upstream.name} answered HTTP ${status}: ${detail}`)
    this.name = 'UpstreamStatus'
  }
}

/** Upstream response headers safe to pass to the client. */
export function passHeaders(answer: HttpAnswer, drop: readonly string[] = []): http.OutgoingHttpHeaders {
  return safeHeaders(answer.headers, drop)
}

/**
 * Whether an upstream response header (lower-case name) may go on to the client: not hop-by-hop,
 * not a cookie, not one Node's server writes itself, not in `drop`.
 */
function passes(k: string, drop: readonly string[]): boolean {
  switch (k) {
    case 'connection':
    case 'keep-alive':
    case 'proxy-authenticate':
    case 'proxy-authorization':
    case 'te':
    case 'trailer':
    case 'transfer-encoding':
    case 'upgrade':
    case 'set-cookie':
    case 'server':
    case 'date':
      return false
  }
  return !drop.includes(k)
}

/** The headers of a response record (lower-case names) that may go on to the client. */
export function safeHeaders(headers: AnswerHeaders, drop: readonly string[] = []): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {}
  for (const k in headers) {
    const v = headers[k]
    if (v !== undefined && passes(k, drop)) out[k] = v
  }
  return out
}

/**
 * Pipes an upstream body to the client with backpressure; an upstream cut short cuts the client
 * too (an error, never a hang), and a client that leaves aborts the upstream's body.
 */
export async function pipeResponse(src: Readable, res: http.ServerResponse): Promise<void> {
  await pipeline(src, res).catch(() => undefined)
}
