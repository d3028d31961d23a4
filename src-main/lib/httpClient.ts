import type { Readable } from 'node:stream'
import { Agent, type Dispatcher } from 'undici'
import pkg from '../../package.json'

/**
 * The daemon's one HTTP client, on undici: the calls it makes on its own (health and deep-health
 * probes, the llm's model list, the update explainer, payment providers, exchange rates, outbound
 * webhooks, the CLI's look for a running daemon) through one shared agent, and the gateway's
 * upstream calls through each upstream's own pool (`sendRequest`).
 *
 * Redirects are not followed: a 3xx is an answer like any other, which every caller treats as a
 * failure (a payment provider or webhook endpoint that moved is the operator's to update).
 */

/** Sent unless the caller names its own: some APIs behind a CDN refuse a request without one. */
const USER_AGENT = `Tandem/${pkg.version}`

/** How much of an answer's body is read when the caller names no limit. */
export const DEFAULT_BODY_LIMIT = 4 * 1024 * 1024

/** An answer's headers, names lower-cased. */
export type AnswerHeaders = Readonly<Record<string, string | string[] | undefined>>

export interface HttpCall {
  readonly method?: string
  readonly headers?: Readonly<Record<string, string | number>>
  readonly body?: Buffer | string | Readable
  /** Required: every call the daemon makes ends by a deadline or its caller's abort. */
  readonly signal: AbortSignal
}

/** An answer whose head has arrived; its body is read by exactly one of the methods, or `body`. */
export interface HttpAnswer {
  readonly status: number
  /** 2xx. */
  readonly ok: boolean
  readonly headers: AnswerHeaders
  /** The body as it arrives (an event stream is read this way). */
  readonly body: Readable
  /** The whole body; more than `limit` bytes is an error, and the connection is closed. */
  bytes(limit?: number): Promise<Buffer>
  text(limit?: number): Promise<string>
  /** The body parsed as JSON; not JSON is an error. */
  json(limit?: number): Promise<unknown>
  /** Drops the body unread (the connection is freed for reuse once it has all arrived). */
  discard(): void
}

/** A call that got no answer: refused, reset, unresolvable. `code` is the system's (ECONNREFUSED …). */
export class HttpUnreachable extends Error {
  readonly code: string | null
  constructor(readonly netError: Error) {
    super(describeNetError(netError))
    this.name = 'HttpUnreachable'
    this.code = (netError as NodeJS.ErrnoException).code ?? null
  }
}

/** An answer's body longer than the reader's limit. */
export class HttpBodyTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`the answer's body is over ${limit} bytes`)
    this.name = 'HttpBodyTooLarge'
  }
}

/** The agent of the daemon's own calls: undici keeps a keep-alive pool per origin in it. */
const ownCalls = new Agent({ connect: { timeout: 10_000 } })

/**
 * Sends one request and resolves once the answer's head has arrived. Rejects with HttpUnreachable
 * when nothing answered, and with the signal's reason (a TimeoutError for AbortSignal.timeout) once
 * it aborts; an abort while the body is read rejects that read the same way.
 */
export function httpCall(url: string | URL, call: HttpCall): Promise<HttpAnswer> {
  const target = typeof url === 'string' ? new URL(url) : url
  if (target.protocol !== 'http:' && target.protocol !== 'https:')
    return Promise.reject(new Error(`not an http(s) URL: ${target.protocol}`))
  // A credential belongs in a header the caller sets, never in a URL that ends up in logs.
  if (target.username !== '' || target.password !== '')
    return Promise.reject(new Error('a URL with credentials in it is not called'))
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(call.headers ?? {})) headers[name.toLowerCase()] = String(value)
  headers['user-agent'] ??= USER_AGENT
  return sendRequest(ownCalls, {
    origin: target.origin,
    path: target.pathname + target.search,
    method: call.method ?? 'GET',
    headers,
    body: typeof call.body === 'string' ? Buffer.from(call.body, 'utf8') : call.body,
    signal: call.signal,
  })
}

/** One request through a dispatcher (the shared agent, or an upstream's pool). */
export interface HttpRequest {
  /** Needed by an agent; a pool has its own. */
  readonly origin?: string
  readonly path: string
  readonly method: string
  readonly headers: Readonly<Record<string, string>>
  /** A Buffer is sent with its length, a stream chunked (unless the headers give its length). */
  readonly body?: Buffer | Readable
  readonly signal?: AbortSignal
}

/**
 * The one place a request is sent: resolves with the answer once its head has arrived; rejects
 * with HttpUnreachable when nothing answered, or with the signal's reason once it aborts.
 */
export async function sendRequest(dispatcher: Dispatcher, req: HttpRequest): Promise<HttpAnswer> {
  const signal = req.signal
  if (signal?.aborted) throw abortReason(signal)
  let data: Dispatcher.ResponseData
  try {
    data = await dispatcher.request({
      origin: req.origin,
      path: req.path,
      method: req.method as Dispatcher.HttpMethod,
      headers: req.headers,
      body: req.body,
      signal,
    })
  } catch (err) {
    if (signal?.aborted) throw abortReason(signal)
    throw new HttpUnreachable(err as Error)
  }
  return answerOf(data, signal)
}

function answerOf(data: Dispatcher.ResponseData, signal: AbortSignal | undefined): HttpAnswer {
  const status = data.statusCode
  const bytes = (limit = DEFAULT_BODY_LIMIT): Promise<Buffer> => readBody(data, limit, { signal })
  return {
    status,
    ok: status >= 200 && status < 300,
    headers: data.headers,
    body: data.body,
    bytes,
    text: async (limit) => (await bytes(limit)).toString('utf8'),
    json: async (limit) => JSON.parse((await bytes(limit)).toString('utf8')) as unknown,
    discard: () => {
      // An answer cut while it is dropped has nobody left to tell.
      data.body.once('error', ignore).resume()
    },
  }
}

/**
 * Reads an answer's body: past `limit` bytes it is refused (the connection closed; the declared
 * length is checked before anything is read), or with `truncate` its first `limit` bytes are kept
 * and the rest read and dropped (an error body, whose connection stays usable). Rejects with the
 * signal's reason once it aborts, and when the answer ends before its end.
 */
export async function readBody(
  answer: { readonly headers: AnswerHeaders; readonly body: Readable },
  limit: number,
  opts: { readonly signal?: AbortSignal; readonly truncate?: boolean } = {},
): Promise<Buffer> {
  const body = answer.body
  // A stream that ended or was destroyed before this read yields nothing more: waiting would be for ever.
  if (body.readableEnded) throw new Error("the answer's body was already read")
  if (opts.signal?.aborted) throw abortReason(opts.signal)
  if (!opts.truncate && Number(answer.headers['content-length'] ?? 0) > limit) {
    dropBody(body)
    throw new HttpBodyTooLarge(limit)
  }
  try {
    return await collect(body, limit, opts.truncate === true)
  } catch (err) {
    if (err instanceof HttpBodyTooLarge) throw err
    if (opts.signal?.aborted) throw abortReason(opts.signal)
    throw new Error(`the connection closed mid-answer (${describeNetError(err as Error)})`, { cause: err })
  }
}

/** A body's bytes up to `limit`: past it an error, or with `truncate` the first `limit` bytes (the rest read and dropped). */
async function collect(body: Readable, limit: number, truncate: boolean): Promise<Buffer> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const c of body as AsyncIterable<Buffer>) {
    if (size + c.length <= limit) chunks.push(c)
    else if (!truncate) throw new HttpBodyTooLarge(limit)
    else if (size < limit) chunks.push(c.subarray(0, limit - size))
    size += c.length
  }
  return Buffer.concat(chunks)
}

/** Closes an answer unread; the abort error it emits is expected. */
export function dropBody(body: Readable): void {
  body.once('error', ignore).destroy()
}

function ignore(): void {}

function abortReason(signal: AbortSignal): Error {
  const r: unknown = signal.reason
  return r instanceof Error ? r : new Error('aborted')
}

/** A network error as one line: its code, then the message when it says more. */
export function describeNetError(err: Error): string {
  const code = (err as NodeJS.ErrnoException).code
  return code ? `${code}${err.message.includes(code) ? '' : ` (${err.message})`}` : err.message
}
