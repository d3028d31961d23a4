import http from 'node:http'
import https from 'node:https'
import type { Readable } from 'node:stream'
import { urlToHttpOptions } from 'node:url'
import pkg from '../../package.json'

/**
 * The daemon's one HTTP client for the calls it makes on its own: health and deep-health probes,
 * the llm's model list, the update explainer, payment providers, exchange rates, outbound webhooks
 * and the CLI's look for a running daemon. (The gateway's relays have their own client,
 * gateway/relayConnections.ts.)
 *
 * Not the global fetch: fetch reads every answer body through a web byte stream, whose queue
 * detaches an ArrayBuffer per chunk, and the first detach in a process makes V8 check every
 * typed-array read for detachment for the rest of the process's life. The gateway reads request
 * and answer bodies a byte at a time, and paid 20–35 % more per byte of a long request once the
 * daemon had made one health probe (docs/gateway-profile.md, eleventh pass).
 *
 * Redirects are not followed: a 3xx is an answer like any other, which every caller treats as a
 * failure (a payment provider or webhook endpoint that moved is the operator's to update).
 */

/** Sent unless the caller names its own: some APIs behind a CDN refuse a request without one. */
const USER_AGENT = `Tandem/${pkg.version}`

/** How much of an answer's body is read when the caller names no limit. */
export const DEFAULT_BODY_LIMIT = 4 * 1024 * 1024

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
  readonly headers: http.IncomingHttpHeaders
  /** The body as it arrives (an event stream is read this way). */
  readonly body: AsyncIterable<Buffer>
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

/**
 * Sends one request and resolves once the answer's head has arrived. Rejects with HttpUnreachable
 * when nothing answered, and with the signal's reason (a TimeoutError for AbortSignal.timeout) once
 * it aborts; an abort while the body is read rejects that read the same way.
 */
export function httpCall(url: string | URL, call: HttpCall): Promise<HttpAnswer> {
  const target = typeof url === 'string' ? new URL(url) : url
  if (target.protocol !== 'http:' && target.protocol !== 'https:')
    return Promise.reject(new Error(`not an http(s) URL: ${target.protocol}`))
  // Refused as fetch refuses them: node:http would send them as Basic auth, and a credential
  // belongs in a header the caller sets.
  if (target.username !== '' || target.password !== '')
    return Promise.reject(new Error('a URL with credentials in it is not called'))
  const body = typeof call.body === 'string' ? Buffer.from(call.body, 'utf8') : call.body
  const headers: http.OutgoingHttpHeaders = { ...call.headers }
  if (!Object.keys(headers).some((name) => name.toLowerCase() === 'user-agent')) headers['user-agent'] = USER_AGENT
  const head = { ...urlToHttpOptions(target), method: call.method ?? 'GET', headers }
  return sendRequest(target.protocol === 'https:', head, body, call.signal).then((res) => answerOf(res, call.signal))
}

/**
 * The one place a request is sent: resolves with the answer once its head has arrived; rejects
 * with HttpUnreachable when nothing answered, or with the signal's reason once it aborts. A Buffer
 * body is sent with its length, a stream chunked. (gateway/wire.ts sends upstream calls with it.)
 */
export function sendRequest(
  secure: boolean,
  head: http.RequestOptions & { headers: http.OutgoingHttpHeaders },
  body: Buffer | Readable | undefined,
  signal: AbortSignal | undefined,
): Promise<http.IncomingMessage> {
  if (signal?.aborted) return Promise.reject(abortReason(signal))
  return new Promise((resolve, reject) => {
    if (Buffer.isBuffer(body)) head.headers['content-length'] = body.length
    const req = (secure ? https : http).request({ ...head, signal })
    let answered = false
    req.once('response', (res) => {
      answered = true
      resolve(res)
    })
    req.once('error', (err) => {
      if (answered) return
      if (signal?.aborted) reject(abortReason(signal))
      else reject(new HttpUnreachable(err))
    })
    if (body === undefined) req.end()
    else if (Buffer.isBuffer(body)) req.end(body)
    else {
      body.once('error', (err) => req.destroy(err))
      body.pipe(req)
    }
  })
}

function answerOf(res: http.IncomingMessage, signal: AbortSignal): HttpAnswer {
  const status = res.statusCode ?? 0
  const bytes = (limit = DEFAULT_BODY_LIMIT): Promise<Buffer> => readBody(res, limit, { signal })
  return {
    status,
    ok: status >= 200 && status < 300,
    headers: res.headers,
    body: res,
    bytes,
    text: async (limit) => (await bytes(limit)).toString('utf8'),
    json: async (limit) => JSON.parse((await bytes(limit)).toString('utf8')) as unknown,
    discard: () => void res.resume(),
  }
}

/**
 * Reads an answer's body: past `limit` bytes it is refused (the connection closed; the declared
 * length is checked before anything is read), or with `truncate` its first `limit` bytes are kept
 * and the rest read and dropped (an error body, whose connection stays usable). Rejects with the
 * signal's reason once it aborts, and when the answer ends before its end.
 */
export function readBody(
  res: http.IncomingMessage,
  limit: number,
  opts: { readonly signal?: AbortSignal; readonly truncate?: boolean } = {},
): Promise<Buffer> {
  const cut = (): Error =>
    opts.signal?.aborted ? abortReason(opts.signal) : new Error('the connection closed mid-answer')
  return new Promise((resolve, reject) => {
    // A stream that ended or was destroyed before this read emits nothing more: waiting would be for ever.
    if (res.readableEnded) return reject(new Error("the answer's body was already read"))
    if (res.destroyed) return reject(cut())
    if (!opts.truncate && Number(res.headers['content-length'] ?? 0) > limit) {
      res.destroy()
      return reject(new HttpBodyTooLarge(limit))
    }
    const chunks: Buffer[] = []
    let size = 0
    res.on('data', (c: Buffer) => {
      if (size + c.length <= limit) chunks.push(c)
      else if (opts.truncate) {
        if (size < limit) chunks.push(c.subarray(0, limit - size))
      } else {
        res.destroy()
        reject(new HttpBodyTooLarge(limit))
      }
      size += c.length
    })
    res.once('end', () => resolve(Buffer.concat(chunks)))
    res.once('error', (err) => reject(opts.signal?.aborted ? abortReason(opts.signal) : err))
    res.once('close', () => {
      if (!res.complete) reject(cut())
    })
  })
}

function abortReason(signal: AbortSignal): Error {
  const r: unknown = signal.reason
  return r instanceof Error ? r : new Error('aborted')
}

/** A network error as one line: its code, then the message when it says more. */
export function describeNetError(err: Error): string {
  const code = (err as NodeJS.ErrnoException).code
  return code ? `${code}${err.message.includes(code) ? '' : ` (${err.message})`}` : err.message
}
