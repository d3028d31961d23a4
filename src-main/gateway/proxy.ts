import type http from 'node:http'
import { ApiError } from '../contract/errors'
import { Deadlines, type Deadline } from '../core/deadlines'
import { describeNetError } from '../core/httpClient'
import type { Logger } from '../core/logger'
import { bodyTimeout } from '../http/bodyDeadline'
import { bodyTooLarge, ClientGone } from '../http/body'
import { requestState, takeEdgeHeaders } from '../http/requestState'
import { sendError } from '../http/respond'
import { checkKeyModel } from './consumerKeys'
import { answerFailure } from './rawRoute'
import type { RelayCall, RelayCallHandler } from './relayConnections'
import type { Exchange, RequestLog } from './requestLog'
import type { Upstream, UpstreamName } from './upstreams'
import type { UsageMeter } from './usageMeter'
import { headerIn, readRelayRequest, safeHeaderList, upstreamDetail } from './wire'

/**
 * Where chat and completions wait while the llm is being swapped: resolves when the request may be
 * forwarded, throws (503 with Retry-After) when it may not, and gives up when `signal` aborts (the
 * client went away). `model` is the request's `model`, for swaps on demand.
 */
export interface LlmGate {
  admit(model: string | null, signal: AbortSignal): Promise<void>
  /** True when `admit` would let the request through at once (then no waiting is set up at all). */
  isOpen?(model: string | null): boolean
}

/** What every relayed route shares: where requests go, how long they may take, where they are logged. */
export interface RelayDeps {
  readonly need: (name: UpstreamName) => Upstream
  readonly log: RequestLog
  readonly logger: Logger
  /** The whole relayed call, from dispatch to the answer's last byte (spec 1, 8: 30 minutes). */
  readonly timeoutMs: number
  readonly bodyLimit: number
  /** How long a client refused mid-body may go on sending before its connection is closed. */
  readonly drainMs: number
  /** Where chat and completions wait until they may go upstream (a model swap). */
  readonly gate?: LlmGate
  /** The relays' deadlines: the body's, then the call's (`relayDeadlines`). */
  readonly deadlines: Deadlines<RelayedRequest>
}

/** The deadlines every relay of one gateway shares: one list and one timer per deadline length. */
export function relayDeadlines(): Deadlines<RelayedRequest> {
  return new Deadlines<RelayedRequest>((relay, ms) => relay.deadlinePassed(ms))
}

/** One relayed route: its path (the request log's name for it) and where it goes. */
export interface RelayTarget {
  readonly path: string
  readonly upstream: 'llm' | 'embeddings'
  /** The path on the upstream, which may depend on its base URL (an embeddings server under /v1). */
  readonly upstreamPath: (up: Upstream) => string
}

/**
 * A relayed route's handler; the same function serves the fast path and the router.
 * `bodyDeadlineMs` bounds the time to receive the body (0: the caller bounds it already).
 */
export type RelayRoute = (req: http.IncomingMessage, res: http.ServerResponse, bodyDeadlineMs: number) => void

/**
 * Forwards an OpenAI-shaped JSON request verbatim (spec 1, 4.9 rule 2): the body bytes go upstream
 * untouched once they parse as a JSON object. `stream: true` answers are piped chunk by chunk with
 * backpressure and no buffering; the client's disconnect aborts the upstream call.
 */
export function relayRoute(deps: RelayDeps, target: RelayTarget): RelayRoute {
  return (req, res, bodyDeadlineMs) => new RelayedRequest(deps, target, req, res).start(bodyDeadlineMs)
}

/** Where one relayed request is. */
const enum Mode {
  /** Reading the client's body. */
  Receiving,
  /** Waiting at the gate (a model swap) before anything goes upstream. */
  Gated,
  /** Sent upstream, no answer yet: a failure now is an error answer of our own (502, 504). */
  Waiting,
  /** Passing the answer on as it arrives. */
  Relaying,
  /** Reading an upstream error body, to answer it as one SSE `error` event (a stream was asked for). */
  StreamError,
  /** Reading an upstream error body, to answer it in OpenAI's error shape. */
  PlainError,
  Done,
}

/** Bytes of an upstream error body kept for the client's error answer. */
const ERROR_BODY_LIMIT = 64 * 1024

/** Upstream headers an event stream's own headers replace. */
const SSE_REPLACED = ['content-length', 'content-type', 'cache-control', 'x-accel-buffering']

/**
 * One relayed request from its first body byte to the log entry: it reads and checks the body,
 * dispatches it as the handler of its upstream call (relayConnections.ts), relays the answer and settles every
 * failure in one place (`fail`). One object per request holds what closures, promises and listeners
 * per step would otherwise hold; its one deadline is first the body's, then the call's, kept in
 * lists the gateway's relays share (core/deadlines.ts), not in a timer of its own.
 * Answers are coalesced: the chunks parsed from one read of the upstream's socket go out as one
 * write (an event stream carries a tiny chunk per token, and a write per token would cost a
 * syscall each on both sides; a small whole answer goes out with its headers in one write).
 * Backpressure: the upstream is paused while the client's socket is full.
 */
export class RelayedRequest implements RelayCallHandler {
  private mode = Mode.Receiving
  private deadline: Deadline<RelayedRequest> | null = null
  private parts: Buffer[] = []
  private received = 0
  private up: Upstream | null = null
  private streaming = false
  private controller: RelayCall | null = null
  private abortReason: Error | null = null
  private status = 0
  private sse = false
  private headers: readonly string[] = []
  private chunks: Buffer[] = []
  private kept = 0
  private flushScheduled = false
  /** Paused until the client's socket drains. */
  private draining = false
  private readonly exchange: Exchange
  private readonly usage: UsageMeter | undefined

  constructor(
    private readonly deps: RelayDeps,
    private readonly target: RelayTarget,
    private readonly req: http.IncomingMessage,
    private readonly res: http.ServerResponse,
  ) {
    this.exchange = deps.log.begin(req, res, target.path)
    this.usage = this.exchange.usage
    res.on('close', this.onClose)
  }

  start(bodyDeadlineMs: number): void {
    const { req, deps } = this
    try {
      this.up = deps.need(this.target.upstream)
    } catch (err) {
      return this.fail(err)
    }
    if (Number(req.headers['content-length'] ?? NaN) > deps.bodyLimit) return this.fail(bodyTooLarge(deps.bodyLimit))
    if (bodyDeadlineMs > 0 && !req.complete) this.deadline = deps.deadlines.start(this, bodyDeadlineMs)
    req.on('data', this.onBodyData)
    req.on('end', this.onBodyEnd)
  }

  private readonly onBodyData = (chunk: Buffer): void => {
    this.received += chunk.length
    if (this.received > this.deps.bodyLimit) {
      this.stopReading()
      return this.fail(bodyTooLarge(this.deps.bodyLimit))
    }
    this.parts.push(chunk)
  }

  private readonly onBodyEnd = (): void => {
    if (this.mode !== Mode.Receiving) return
    this.endDeadline()
    const p = this.parts
    this.parts = []
    const received = p.length === 1 ? p[0]! : Buffer.concat(p)
    let raw: Buffer
    let model: string | null
    try {
      const request = readRelayRequest(received)
      checkKeyModel(requestState(this.res).consumer, request.model)
      this.streaming = request.stream
      model = request.model
      // Forwarded verbatim, except that a stream's usage is asked for when the client did not ask.
      raw = this.usage ? this.usage.prepareRequest(request, received) : received
    } catch (err) {
      return this.fail(err)
    }
    const gate = this.target.upstream === 'llm' ? this.deps.gate : undefined
    if (gate === undefined || gate.isOpen?.(model) === true) return this.dispatch(raw)
    this.mode = Mode.Gated
    admitOrLeave(this.res, (signal) => gate.admit(model, signal)).then(
      () => this.dispatch(raw),
      (err: unknown) => this.fail(err),
    )
  }

  private stopReading(): void {
    this.req.off('data', this.onBodyData)
    this.req.off('end', this.onBodyEnd)
    this.req.resume()
  }

  /** The deadline started for `ms` passed: the body's while receiving, the call's after. */
  deadlinePassed(ms: number): void {
    this.deadline = null
    if (this.mode === Mode.Receiving) this.bodyExpired(ms)
    else if (this.mode !== Mode.Done) this.callExpired()
  }

  /** The body did not arrive in time: 408, and the connection closes after it. */
  private bodyExpired(ms: number): void {
    if (this.req.complete || this.req.socket.destroyed) return
    this.stopReading()
    this.fail(bodyTimeout(ms))
  }

  private dispatch(raw: Buffer): void {
    if (this.mode === Mode.Done) return
    this.mode = Mode.Waiting
    const up = this.up!
    this.deadline = this.deps.deadlines.start(this, this.deps.timeoutMs)
    up.relay.dispatch(
      {
        path: up.target.basePath + this.target.upstreamPath(up),
        headers: this.streaming ? STREAM_CALL_HEADERS : JSON_CALL_HEADERS,
        body: raw,
      },
      this,
    )
  }

  /** The call's deadline passed: it is cancelled with a 504 (or an error event mid-stream). */
  private callExpired(): void {
    const minutes = Math.round(this.deps.timeoutMs / 60000)
    this.abort(
      new ApiError('upstream_timeout', `${this.up!.name} did not finish within ${minutes} min`, { status: 504 }),
    )
  }

  /** Cancels the upstream call (deadline, client gone); the reason reaches onResponseError. */
  private abort(reason: Error): void {
    if (this.abortReason !== null || this.mode === Mode.Done) return
    this.abortReason = reason
    this.controller?.abort(reason)
  }

  /** The response closed: the exchange lands in the log, and a client that left stops the work. */
  private readonly onClose = (): void => {
    if (this.mode === Mode.Receiving || this.mode === Mode.Gated) this.finish()
    else if (!this.res.writableFinished) this.abort(new ClientGone())
    this.exchange.closed()
  }

  private readonly onDrain = (): void => {
    this.draining = false
    if (this.mode !== Mode.Done) this.controller?.resume()
  }

  onRequestStart(controller: RelayCall): void {
    this.controller = controller
    if (this.abortReason !== null) controller.abort(this.abortReason)
  }

  onResponseStart(_controller: RelayCall, status: number, headers: readonly string[]): void {
    if (status < 200) return // an informational answer: the real one follows
    this.status = status
    this.headers = headers
    if (this.streaming && status !== 200) {
      this.exchange.markStreamed()
      this.mode = Mode.StreamError
      return
    }
    this.sse = this.streaming || (headerIn(headers, 'content-type')?.startsWith('text/event-stream') ?? false)
    // An upstream's error answer: in OpenAI's shape, so the official clients show its message.
    if (!this.sse && status >= 400) {
      this.mode = Mode.PlainError
      return
    }
    this.mode = Mode.Relaying
    if (this.sse) {
      this.exchange.markStreamed()
      this.writeHead(status, safeHeaderList(headers, SSE_REPLACED, this.edgeHeaders()).concat(SSE_HEADERS))
      // The headers leave at the end of this tick: with the first events when they came in the same
      // read (one write, not two), alone when they did not (the client still sees them at once).
      this.scheduleFlush()
    } else this.writeHead(status, safeHeaderList(headers, [], this.edgeHeaders()))
  }

  /** The edge's headers the fast path left for the answer's one `writeHead`; none when already set. */
  private edgeHeaders(): string[] {
    const edge = takeEdgeHeaders(this.res)
    return edge === undefined ? [] : [...edge]
  }

  private writeHead(status: number, headers: string[]): void {
    this.res.writeHead(status, headers)
    this.exchange.markHeaders()
  }

  onResponseData(_controller: RelayCall, chunk: Buffer): void {
    if (this.mode !== Mode.Relaying) {
      if (this.kept < ERROR_BODY_LIMIT) this.chunks.push(chunk.subarray(0, ERROR_BODY_LIMIT - this.kept))
      this.kept += chunk.length
      return
    }
    // An event stream is metered per read, in flush (one pass over all the events of a read, not one per event).
    if (!this.sse) this.usage?.onBodyChunk(chunk)
    this.chunks.push(chunk)
    this.scheduleFlush()
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return
    this.flushScheduled = true
    process.nextTick(flushRelay, this)
  }

  /** Writes the chunks gathered from one read of the upstream's socket (and headers still held) as one write. */
  flush(): void {
    this.flushScheduled = false
    const res = this.res
    if (res.destroyed || res.writableEnded) return
    const out = this.meteredChunks()
    if (out === undefined) {
      if (!res.headersSent) res.flushHeaders()
      return
    }
    if (!res.write(out) && !this.draining) {
      this.draining = true
      this.controller?.pause()
      res.once('drain', this.onDrain)
    }
  }

  onResponseEnd(): void {
    const res = this.res
    const mode = this.mode
    this.finish()
    if (res.destroyed || res.writableEnded) return
    if (mode === Mode.StreamError) return this.answerStreamError(this.errorText())
    if (mode === Mode.PlainError) return this.answerPlainError(this.errorText())
    const usage = this.usage
    if (!usage || !this.sse) {
      usage?.endBody()
      // The last bytes and the end of the body in one write.
      return void res.end(this.takeChunks())
    }
    const last = this.meteredChunks()
    const rest = usage.flushSse()
    res.end(rest.length === 0 ? last : last === undefined ? rest : Buffer.concat([last, rest]))
  }

  onResponseError(_controller: RelayCall, err: Error): void {
    const mode = this.mode
    if (mode === Mode.Done) return
    const reason = this.abortReason ?? err
    if (mode === Mode.Waiting) {
      if (reason instanceof ClientGone || reason instanceof ApiError) return this.fail(reason)
      const up = this.up!
      return this.fail(
        new ApiError('upstream_unreachable', `${up.name} is unreachable at ${up.base}: ${describeNetError(err)}`),
      )
    }
    this.finish()
    const res = this.res
    if (res.destroyed || res.writableEnded) return
    // The error body could not be read whole: answer with what there is.
    if (mode === Mode.StreamError) return this.answerStreamError(this.errorText())
    if (mode === Mode.PlainError) return this.answerPlainError(this.errorText())
    this.endMidAnswer(reason)
  }

  /** Every failure before the answer began, answered as every raw route answers one (answerFailure). */
  private fail(err: unknown): void {
    this.finish()
    answerFailure(this.deps, this.target.path, 'openai', this.req, this.res, err)
  }

  /** The upstream went away mid-answer: end the client's stream with an error, never leave it hanging. */
  private endMidAnswer(reason: Error): void {
    const res = this.res
    this.deps.logger.warn('upstream ended mid-response', { path: this.target.path, upstream: this.up!.name })
    if (!this.sse) {
      res.destroy()
      return
    }
    const rest = this.meteredChunks()
    if (rest) res.write(rest)
    const message =
      reason instanceof ApiError
        ? reason.message
        : `${this.up!.name} closed the connection before the answer was complete`
    res.end(`\n\nevent: error\ndata: ${JSON.stringify({ error: { message, type: 'upstream_error', code: 502 } })}\n\n`)
  }

  /** Spec 1, 6.1: exactly one SSE event named `error` carrying the upstream's error, then the end. */
  private answerStreamError(text: string): void {
    this.writeHead(200, this.edgeHeaders().concat(SSE_HEADERS))
    this.res.end(`event: error\ndata: ${errorEventData(this.status, text, this.up!.name)}\n\n`)
  }

  /** An upstream's error answer in OpenAI's shape; passed on as it is when it already has that shape. */
  private answerPlainError(text: string): void {
    const res = this.res
    if (hasErrorObject(text)) {
      this.writeHead(this.status, safeHeaderList(this.headers, ['content-length'], this.edgeHeaders()))
      res.end(text)
      return
    }
    const detail = `${this.up!.name} answered HTTP ${this.status}: ${upstreamDetail(text)}`
    sendError(res, new ApiError('upstream_error', detail, { status: this.status }), 'openai')
  }

  /** The chunks gathered for the client, through the usage meter on an event stream; undefined when none are left. */
  private meteredChunks(): Buffer | undefined {
    const out = this.takeChunks()
    const usage = this.usage
    if (out === undefined || !usage || !this.sse) return out
    const kept = usage.onSseChunk(out)
    return kept.length === 0 ? undefined : kept // only an event Tandem asked for, which the client never sees
  }

  private takeChunks(): Buffer | undefined {
    const c = this.chunks
    this.chunks = []
    return c.length === 0 ? undefined : c.length === 1 ? c[0] : Buffer.concat(c)
  }

  private errorText(): string {
    return this.takeChunks()?.toString('utf8') ?? ''
  }

  private endDeadline(): void {
    if (this.deadline === null) return
    this.deadline.cancel()
    this.deadline = null
  }

  /** Ends the work once: the deadline and the drain listener go (the close listener stays for the log). */
  private finish(): void {
    this.mode = Mode.Done
    this.endDeadline()
    this.res.off('drain', this.onDrain)
  }
}

function flushRelay(relay: RelayedRequest): void {
  relay.flush()
}

/** Waits at the gate; a client that leaves meanwhile is released and nothing goes upstream. */
async function admitOrLeave(res: http.ServerResponse, wait: (signal: AbortSignal) => Promise<void>): Promise<void> {
  const left = new AbortController()
  const onClose = (): void => left.abort(new ClientGone())
  if (res.destroyed) throw new ClientGone()
  res.once('close', onClose)
  try {
    await wait(left.signal)
  } finally {
    res.off('close', onClose)
  }
  if (left.signal.aborted || res.destroyed) throw new ClientGone()
}

/** A relayed call's headers besides host and length, one list per kind. */
const JSON_CALL_HEADERS: readonly string[] = ['content-type', 'application/json', 'accept', 'application/json']
const STREAM_CALL_HEADERS: readonly string[] = ['content-type', 'application/json', 'accept', 'text/event-stream']

/** An event stream's own headers, as a `writeHead` list. */
const SSE_HEADERS: readonly string[] = [
  'content-type',
  'text/event-stream; charset=utf-8',
  'cache-control',
  'no-cache',
  'x-accel-buffering',
  'no',
]

/** True when a body is already OpenAI's error shape: a JSON object with an `error` object. */
function hasErrorObject(text: string): boolean {
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
