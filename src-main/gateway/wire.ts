import http from 'node:http'
import type { Readable } from 'node:stream'
import { ApiError } from '../contract/errors'
import { describeNetError, HttpUnreachable, readBody, sendRequest } from '../core/httpClient'
import { jsonTooDeep, malformedJson, parseJsonText } from '../http/body'
import { memberIsTrue, memberString, memberValue, scanJson } from './jsonScan'
import type { Upstream } from './upstreams'

/** Low-level HTTP plumbing shared by every gateway route: JSON bodies and upstream calls. */

export const MiB = 1024 * 1024

/** Deep enough for any tool or response-format JSON schema a client sends to the llm. */
export const GATEWAY_JSON_DEPTH = 256

/** Parses a JSON object body: 400 for anything else, before any upstream is called. */
export function parseJsonObject(raw: Buffer): Record<string, unknown> {
  const v = parseJsonText(raw.toString('utf8'), GATEWAY_JSON_DEPTH)
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw notAnObject()
  return v as Record<string, unknown>
}

function notAnObject(): ApiError {
  return new ApiError('bad_input', 'request body must be a JSON object')
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

const RELAY_MEMBERS = ['model', 'stream', 'stream_options'].map((name) => Buffer.from(name))

/**
 * Reads a relayed request's body with the same 400s as parseJsonObject, by a scan that builds
 * nothing (gateway/jsonScan.ts): the three members the relay needs are all it reads.
 */
export function readRelayRequest(raw: Buffer): RelayRequest {
  const scan = scanJson(raw, GATEWAY_JSON_DEPTH, RELAY_MEMBERS)
  if (scan.error === 'too_deep') throw jsonTooDeep(GATEWAY_JSON_DEPTH)
  if (scan.error !== null) throw malformedJson()
  if (!scan.isObject) throw notAnObject()
  return {
    model: memberString(raw, scan, 0),
    stream: memberIsTrue(raw, scan, 1),
    streamOptions: memberValue(raw, scan, 2),
  }
}

export interface UpstreamCall {
  readonly method: 'GET' | 'POST'
  readonly path: string
  readonly headers?: http.OutgoingHttpHeaders
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

/** Sends one request to an upstream; resolves with its response as soon as the headers arrive. */
export async function callUpstream(up: Upstream, call: UpstreamCall): Promise<http.IncomingMessage> {
  const t = up.target
  const head = {
    hostname: t.hostname,
    port: t.port,
    path: t.basePath + call.path,
    method: call.method,
    headers: { ...call.headers },
    agent: up.agent,
  }
  try {
    return await sendRequest(t.https, head, call.body, call.signal)
  } catch (err) {
    throw err instanceof HttpUnreachable ? new UpstreamUnreachable(up, err.netError) : err
  }
}

/** Reads at most `limit` bytes of an upstream body as text (error bodies, small JSON); the rest is read and dropped. */
export async function readText(res: http.IncomingMessage, limit = 64 * 1024): Promise<string> {
  return (await readBody(res, limit, { truncate: true })).toString('utf8')
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
  const status = res.statusCode ?? 502
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
export function passHeaders(res: http.IncomingMessage, drop: readonly string[] = []): http.OutgoingHttpHeaders {
  return safeHeaders(res.headers, drop)
}

/**
 * Whether an upstream response header (lower-case name) may go on to the client: not hop-by-hop,
 * not a cookie, not one Node's server writes itself, not in `drop`. A switch, not a Set: a Set
 * hashes every name it is asked about, and a relayed answer's names are new strings each time
 * (docs/gateway-profile.md, twelfth pass).
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
  return drop.length === 0 || !drop.includes(k)
}

/** The headers of a response record (lower-case names) that may go on to the client. */
export function safeHeaders(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  drop: readonly string[] = [],
): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {}
  for (const k in headers) {
    const v = headers[k]
    if (v !== undefined && passes(k, drop)) out[k] = v
  }
  return out
}

/**
 * The safe ones of an answer's header list (name, value, …, names lower-cased) appended to `into`
 * as a `writeHead` list: Node writes such a list as it is, where an object after `setHeader` calls
 * goes through `setHeader` again.
 */
export function safeHeaderList(headers: readonly string[], drop: readonly string[], into: string[]): string[] {
  for (let i = 0; i < headers.length; i += 2) if (passes(headers[i]!, drop)) into.push(headers[i]!, headers[i + 1]!)
  return into
}

/** The first value of `name` (lower-case) in a header list, or undefined. */
export function headerIn(headers: readonly string[], name: string): string | undefined {
  for (let i = 0; i < headers.length; i += 2) if (headers[i] === name) return headers[i + 1]
  return undefined
}

/** Pipes an upstream body to the client; an upstream cut short cuts the client too (an error, never a hang). */
export function pipeResponse(src: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    src.pipe(res)
    src.once('error', () => undefined)
    src.once('close', () => {
      if (!src.complete && !res.destroyed) res.destroy()
      resolve()
    })
    res.once('close', resolve)
  })
}
