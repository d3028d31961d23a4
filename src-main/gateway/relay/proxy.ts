import type http from 'node:http'
import type { Dispatcher } from 'undici'
import { ApiError } from '../../contract/errors'
import type { Logger } from '../../lib/logger'
import { ClientGone } from '../../http/body'
import { requestState } from '../../http/requestState'
import { sendError } from '../../http/respond'
import type { PlacementRoute } from '../../models/types'
import { checkKeyModel, checkKeyPlacement } from '../keys/consumerKeyStore'
import { bodyHolders, type BodyBudget } from './bodyBudget'
import { ChargedBody } from './chargedBody'
import { placedRoute, type PlacementUpstreams } from './placementUpstreams'
import { answerFailure } from './rawRoute'
import type { Exchange, RequestLog } from './requestLog'
import type { Upstream, UpstreamName } from './upstreams'
import type { UsageMeter } from './usageMeter'
import type { RelayBodyParser } from './relayBodyParser'
import {
  ERROR_BODY_LIMIT,
  errorEventData,
  hasErrorObject,
  JSON_CALL_HEADERS,
  SSE_HEADERS,
  SSE_REPLACED,
  STREAM_CALL_HEADERS,
  upstreamFault,
} from './upstreamAnswers'
import { safeHeaders, upstreamDetail, type RelayRequest } from './wire'

/** What every relayed route shares: where requests go, how long they may take, where they are logged. */
export interface RelayDeps {
  readonly need: (name: UpstreamName) => Upstream
  readonly log: RequestLog
  readonly logger: Logger
  /** The whole relayed call, from dispatch to the answer's last byte (spec 1, 8: 30 minutes). */
  readonly timeoutMs: number
  readonly bodyLimit: number
  /** What the bodies in progress may hold in memory together; each is charged from its first byte to its answer's end. */
  readonly bodyBudget: BodyBudget
  /** How long a client refused mid-body may go on sending before its connection is closed. */
  readonly drainMs: number
  /** A body that sends nothing for this long is answered 408 and its room released. */
  readonly bodyIdleMs: number
  /** Reads `model` and `stream` of a body that has arrived (a large one off the main thread). */
  readonly parser: RelayBodyParser
  /**
   * The placements: chat and completions go to the one serving the body's `model` (waiting while a
   * placement job touches it), embeddings when their `model` names one. Without it the llm routes
   * go to the llm service.
   */
  readonly placements?: PlacementUpstreams
}

/** One relayed route: its path (the request log's name for it) and where it goes. */
export interface RelayTarget {
  readonly path: string
  readonly upstream: 'llm' | 'embeddings'
  /** The path on the upstream, which may depend on its base URL (an embeddings server under /v1). */
  readonly upstreamPath: (up: Upstream) => string
}

/** A relayed route's handler, mounted on the router; the server bounds the time to receive the body. */
export type RelayRoute = (req: http.IncomingMessage, res: http.ServerResponse) => void

/**
 * Forwards an OpenAI-shaped JSON request verbatim (spec 1, 4.9 rule 2): the body bytes go upstream
 * untouched once they parse as a JSON object. `stream: true` answers are piped chunk by chunk with
 * backpressure and no buffering; the client's disconnect aborts the upstream call.
 */
export function relayRoute(deps: RelayDeps, target: RelayTarget): RelayRoute {
  return (req, res) => new RelayedRequest(deps, target, req, res).start()
}

/** Where one relayed request is. */
const enum Mode {
  /** Reading the client's body. */
  Receiving,
  /** Waiting for the router (a placement job holds the model) before anything goes upstream. */
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

/**
 * One relayed request from its first body byte to the log entry: it reads and checks the body,
 * dispatches it on the upstream's undici pool as the call's handler, relays the answer and settles
 * every failure in one place (`fail`). Answers are coalesced: the chunks undici parsed from one
 * read of the upstream's socket go out as one write (an event stream carries a tiny chunk per
 * token, and a write per token would cost a syscall each on both sides). Backpressure: the
 * upstream call is paused while the client's socket is full.
 */
export class RelayedRequest implements Dispatcher.DispatchHandler {
  private mode = Mode.Receiving
  private timer: NodeJS.Timeout | null = null
  /** The client's body, charged to the budget from its first byte until the answer ends. */
  private body: ChargedBody | null = null
  private up: Upstream | null = null
  /** The placement the request went to (deep health probes it when its engine fails). */
  private routeId: string | null = null
  /** The placement whose in-flight count this request holds until it ends. */
  private counted: string | null = null
  private streaming = false
  private controller: Dispatcher.DispatchController | null = null
  private abortReason: Error | null = null
  private status = 0
  private sse = false
  private headers: http.IncomingHttpHeaders = {}
  private chunks: Buffer[] = []
  private kept = 0
  private flushScheduled = false
  /** Paused until the client's socket drains. */
  private draining = false
  /** undici has handed the whole body to the socket (onRequestSent). */
  private bodySent = false
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

  start(): void {
    const { req, deps } = this
    // Routed requests learn their upstream from the body's `model`.
    if (deps.placements === undefined)
      try {
        this.up = deps.need(this.target.upstream)
      } catch (err) {
        return this.fail(err)
      }
    const { client, consumer } = requestState(this.res)
    this.body = new ChargedBody(deps, req, bodyHolders(client.limitKey, consumer), {
      read: (request, raw) => this.onBodyRead(request, raw),
      refused: (err) => {
        if (this.mode === Mode.Receiving) this.fail(err)
      },
    })
    try {
      this.body.start()
    } catch (err) {
      this.fail(err)
    }
  }

  /** The body is read: the key's models are checked and the request routed, unless it ended meanwhile. */
  private onBodyRead(request: RelayRequest, received: Buffer): void {
    if (this.mode !== Mode.Receiving) return
    const placements = this.deps.placements
    try {
      const placed = placements && (() => placements.router.placed())
      // Embeddings without a placed `model`, and any request without placements, go to a service's
      // unnamed default model; chat and completions through the router check the placement it picks.
      const unnamedDefault = placements === undefined || this.target.upstream === 'embeddings' ? null : undefined
      checkKeyModel(requestState(this.res).consumer, request.model, placed, unnamedDefault)
      this.streaming = request.stream
      // Forwarded verbatim: the meter only notes whether the client asked for a stream's usage.
      this.usage?.readRequest(request)
    } catch (err) {
      return this.fail(err)
    }
    if (placements === undefined) return this.dispatch(received)
    this.route(placements, request.model, received)
  }

  /**
   * Chat and completions go to the placement serving `model`; embeddings only when `model` names a
   * placed model, else to the embeddings service. The router answers at once when it can (no wait
   * is set up), else the request waits for it: a 404 or 503 it throws is answered in OpenAI's shape.
   */
  private route(placements: PlacementUpstreams, model: string | null, raw: Buffer): void {
    const router = placements.router
    if (this.target.upstream === 'embeddings' && placedRoute(router, model) === null) {
      try {
        this.up = this.deps.need('embeddings')
      } catch (err) {
        return this.fail(err)
      }
      return this.dispatch(raw)
    }
    const now = router.routeNow(model)
    if (now !== null) return this.toPlacement(placements, now, raw)
    this.mode = Mode.Gated
    admitOrLeave(this.res, (signal) => router.admit(model, signal)).then(
      (routes) => this.toPlacement(placements, routes, raw),
      (err: unknown) => this.fail(err),
    )
  }

  /**
   * Sends the request, as it came, to the least busy of the placement's copies that answer, if the
   * caller's key may reach it. A catalog key reaches the engine unchanged: Tandem launches engines
   * with the key among their served names.
   */
  private toPlacement(placements: PlacementUpstreams, routes: readonly PlacementRoute[], raw: Buffer): void {
    if (this.mode === Mode.Done) return
    const route = placements.pick(routes)
    try {
      checkKeyPlacement(requestState(this.res).consumer, route)
      this.up = placements.upstream(route)
    } catch (err) {
      return this.fail(err)
    }
    this.exchange.routedTo(route.id)
    this.routeId = route.id
    placements.begin(route.id)
    this.counted = route.id
    this.dispatch(raw)
  }

  private dispatch(raw: Buffer): void {
    if (this.mode === Mode.Done) return
    this.mode = Mode.Waiting
    const up = this.up!
    this.timer = setTimeout(() => this.callExpired(), this.deps.timeoutMs)
    up.pool.dispatch(
      {
        method: 'POST',
        path: up.basePath + this.target.upstreamPath(up),
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
      new ApiError('upstream_timeout', `${this.up!.label} did not finish within ${minutes} min`, { status: 504 }),
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

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller
    if (this.abortReason !== null) controller.abort(this.abortReason)
  }

  onResponseStart(_controller: Dispatcher.DispatchController, status: number, headers: http.IncomingHttpHeaders): void {
    if (status < 200) return // an informational answer: the real one follows
    this.status = status
    this.headers = headers
    if (status >= 500) this.engineFailed(`a relayed request got HTTP ${status}`)
    if (this.streaming && status !== 200) {
      this.exchange.markStreamed()
      this.mode = Mode.StreamError
      return
    }
    this.sse = this.streaming || (headers['content-type']?.startsWith('text/event-stream') ?? false)
    // An upstream's error answer: in OpenAI's shape, so the official clients show its message.
    if (!this.sse && status >= 400) {
      this.mode = Mode.PlainError
      return
    }
    this.mode = Mode.Relaying
    if (this.sse) {
      this.exchange.markStreamed()
      this.writeHead(status, { ...safeHeaders(headers, SSE_REPLACED), ...SSE_HEADERS })
      // The headers leave at the end of this tick: with the first events when they came in the same
      // read (one write, not two), alone when they did not (the client still sees them at once).
      this.scheduleFlush()
    } else this.writeHead(status, safeHeaders(headers))
  }

  private writeHead(status: number, headers: http.OutgoingHttpHeaders): void {
    this.res.writeHead(status, headers)
    this.exchange.markHeaders()
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
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

  /** undici has handed the whole body to the upstream's socket. */
  onRequestSent(): void {
    this.bodySent = true
  }

  onResponseEnd(): void {
    const res = this.res
    const mode = this.mode
    // The whole answer came after the whole body was handed over: an upstream answers once it has
    // read the body (an engine parses it), so its bytes have left the socket and its buffer may be
    // reused. A call that failed or was cut gives its buffer up to the garbage collector instead.
    this.finish(this.bodySent)
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

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    const mode = this.mode
    if (mode === Mode.Done) return
    const reason = this.abortReason ?? upstreamFault(this.up!, err, mode !== Mode.Waiting)
    // The client leaving or the call's own deadline says nothing about the engine.
    if (this.abortReason === null) this.engineFailed(`a relayed request failed: ${reason.message}`)
    if (mode === Mode.Waiting) return this.fail(reason)
    this.finish()
    const res = this.res
    if (res.destroyed || res.writableEnded) return
    // The error body could not be read whole: answer with what there is.
    if (mode === Mode.StreamError) return this.answerStreamError(this.errorText())
    if (mode === Mode.PlainError) return this.answerPlainError(this.errorText())
    this.endMidAnswer(reason)
  }

  /** Asks deep health to probe the placement this request went to (llm routes through placements only). */
  private engineFailed(reason: string): void {
    if (this.routeId !== null) this.deps.placements?.failed(this.routeId, reason)
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
    const message = reason.message
    res.end(`\n\nevent: error\ndata: ${JSON.stringify({ error: { message, type: 'upstream_error', code: 502 } })}\n\n`)
  }

  /** Spec 1, 6.1: exactly one SSE event named `error` carrying the upstream's error, then the end. */
  private answerStreamError(text: string): void {
    this.writeHead(200, SSE_HEADERS)
    this.res.end(`event: error\ndata: ${errorEventData(this.status, text, this.up!.label)}\n\n`)
  }

  /** An upstream's error answer in OpenAI's shape; passed on as it is when it already has that shape. */
  private answerPlainError(text: string): void {
    const res = this.res
    if (hasErrorObject(text)) {
      this.writeHead(this.status, safeHeaders(this.headers, ['content-length']))
      res.end(text)
      return
    }
    const detail = `${this.up!.label} answered HTTP ${this.status}: ${upstreamDetail(text)}`
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

  /** Ends the work once: the deadline, the drain listener and the body's room go (the close listener stays for the log). */
  private finish(recycle = false): void {
    this.mode = Mode.Done
    this.body?.release(recycle)
    if (this.counted !== null) this.deps.placements?.end(this.counted)
    this.counted = null
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
    this.res.off('drain', this.onDrain)
  }
}

function flushRelay(relay: RelayedRequest): void {
  relay.flush()
}

/** Waits for the router; a client that leaves meanwhile is released and nothing goes upstream. */
async function admitOrLeave<T>(res: http.ServerResponse, wait: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const left = new AbortController()
  const onClose = (): void => left.abort(new ClientGone())
  if (res.destroyed) throw new ClientGone()
  res.once('close', onClose)
  let admitted: T
  try {
    admitted = await wait(left.signal)
  } finally {
    res.off('close', onClose)
  }
  if (left.signal.aborted || res.destroyed) throw new ClientGone()
  return admitted
}
