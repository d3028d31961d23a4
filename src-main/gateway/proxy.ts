import type http from 'node:http'
import type { Dispatcher } from 'undici'
import { ApiError } from '../contract/errors'
import type { Logger } from '../core/logger'
import type { Upstream } from './upstreams'
import { describeNetError, parseJsonObject, safeHeaders, upstreamDetail } from './wire'
import { ClientGone, readBody } from '../http/body'
import { sendError } from '../http/respond'
import type { UsageMeter } from './usageMeter'

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

/**
 * Forwards an OpenAI-shaped JSON request verbatim (spec 1, 4.9 rule 2): the body bytes go upstream
 * untouched once they parse as a JSON object. `stream: true` answers are piped chunk by chunk with
 * backpressure and no buffering; the client's disconnect aborts the upstream call.
 */
export interface ForwardOptions {
  readonly path: string
  readonly timeoutMs: number
  readonly bodyLimit: number
  readonly logger: Logger
  /** The request-log entry: told when the headers went out and whether the answer streams. */
  readonly exchange?: { markHeaders(): void; markStreamed(): void }
  /** Where the request waits until it may go upstream (a model swap). */
  readonly gate?: LlmGate
  /** Refuses (throws) a model the caller may not use, before anything goes upstream. */
  readonly checkModel?: (model: unknown) => void
  /** Usage accounting (tokens, TTFT, tokens/s); absent when accounting is off. */
  readonly usage?: UsageMeter
}

export async function forwardJson(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  up: Upstream,
  opts: ForwardOptions,
): Promise<void> {
  const received = await readBody(req, opts.bodyLimit)
  const body = parseJsonObject(received)
  opts.checkModel?.(body.model)
  const streaming = body.stream === true
  // Forwarded verbatim, except that a stream's usage is asked for when the client did not ask.
  const raw = opts.usage ? opts.usage.prepareRequest(body, received) : received
  const gate = opts.gate
  if (gate) {
    const model = typeof body.model === 'string' ? body.model : null
    if (gate.isOpen?.(model) !== true) await admitOrLeave(res, (signal) => gate.admit(model, signal))
  }
  return new Promise<void>((resolve, reject) => new Relay(res, up, opts, streaming, resolve, reject).send(raw))
}

/** What the relay is doing with the upstream's answer. */
const enum Mode {
  /** No answer yet: a failure now is an error answer of our own (502, 504). */
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

/**
 * One relayed request, as the undici handler of its upstream call. One object per request holds
 * what closures and listeners per event would otherwise hold, and its deadline's callback is shared.
 * Answers are coalesced: the chunks parsed from one read of the upstream's socket go out as one
 * write (an event stream carries a tiny chunk per token, and a write per token would cost a
 * syscall each on both sides; a small whole answer goes out with its headers in one write).
 * Backpressure: the upstream is paused while the client's socket is full.
 */
class Relay implements Dispatcher.DispatchHandler {
  private mode = Mode.Waiting
  private controller: Dispatcher.DispatchController | null = null
  private abortReason: Error | null = null
  private readonly timer: NodeJS.Timeout
  private status = 0
  private sse = false
  private headers: Record<string, string | string[]> = {}
  private chunks: Buffer[] = []
  private kept = 0
  private flushScheduled = false
  /** Paused until the client's socket drains. */
  private draining = false

  constructor(
    private readonly res: http.ServerResponse,
    private readonly up: Upstream,
    private readonly opts: ForwardOptions,
    private readonly streaming: boolean,
    private readonly resolve: () => void,
    private readonly reject: (err: unknown) => void,
  ) {
    this.timer = setTimeout(expire, opts.timeoutMs, this)
    this.timer.unref()
    res.on('close', this.onClientClose) // removed in finish(); `once` would allocate a wrapper per request
  }

  send(raw: Buffer): void {
    this.up.pool.dispatch(
      {
        method: 'POST',
        path: this.up.target.basePath + this.opts.path,
        headers: {
          'content-type': 'application/json',
          accept: this.streaming ? 'text/event-stream' : 'application/json',
          'content-length': String(raw.length),
        },
        body: raw,
      },
      this,
    )
  }

  /** The deadline passed: the upstream call is cancelled with a 504 (or an error event mid-stream). */
  expire(): void {
    const minutes = Math.round(this.opts.timeoutMs / 60000)
    this.abort(
      new ApiError('upstream_timeout', `${this.up.name} did not finish within ${minutes} min`, { status: 504 }),
    )
  }

  /** Cancels the upstream call (deadline, client gone); the reason reaches onResponseError. */
  private abort(reason: Error): void {
    if (this.abortReason !== null || this.mode === Mode.Done) return
    this.abortReason = reason
    this.controller?.abort(reason)
  }

  private readonly onClientClose = (): void => {
    if (!this.res.writableFinished) this.abort(new ClientGone())
  }

  private readonly onDrain = (): void => {
    this.draining = false
    if (this.mode !== Mode.Done) this.controller?.resume()
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller
    if (this.abortReason !== null) controller.abort(this.abortReason)
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    status: number,
    headers: Record<string, string | string[]>,
  ): void {
    if (status < 200) return // an informational answer: the real one follows
    this.status = status
    this.headers = headers
    if (this.streaming && status !== 200) {
      this.opts.exchange?.markStreamed()
      this.mode = Mode.StreamError
      return
    }
    const type = headers['content-type']
    this.sse = this.streaming || (typeof type === 'string' && type.startsWith('text/event-stream'))
    // An upstream's error answer: in OpenAI's shape, so the official clients show its message.
    if (!this.sse && status >= 400) {
      this.mode = Mode.PlainError
      return
    }
    this.mode = Mode.Relaying
    const res = this.res
    if (this.sse) {
      this.opts.exchange?.markStreamed()
      res.writeHead(status, { ...safeHeaders(headers, ['content-length']), ...sseHeaders() })
      // The headers leave at the end of this tick: with the first events when they came in the same
      // read (one write, not two), alone when they did not (the client still sees them at once).
      this.scheduleFlush()
    } else res.writeHead(status, safeHeaders(headers))
    this.opts.exchange?.markHeaders()
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.mode !== Mode.Relaying) {
      if (this.kept < ERROR_BODY_LIMIT) this.chunks.push(chunk.subarray(0, ERROR_BODY_LIMIT - this.kept))
      this.kept += chunk.length
      return
    }
    // An event stream is metered per read, in flush (one pass over all the events of a read, not one per event).
    if (!this.sse) this.opts.usage?.onBodyChunk(chunk)
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
    this.resolve()
    if (res.destroyed || res.writableEnded) return
    if (mode === Mode.StreamError) return this.answerStreamError(this.errorText())
    if (mode === Mode.PlainError) return this.answerPlainError(this.errorText())
    const usage = this.opts.usage
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
    this.finish()
    const res = this.res
    const reason = this.abortReason ?? err
    if (mode === Mode.Waiting) {
      if (reason instanceof ClientGone || res.destroyed) return this.resolve()
      if (reason instanceof ApiError) return this.reject(reason)
      const up = this.up
      return this.reject(
        new ApiError('upstream_unreachable', `${up.name} is unreachable at ${up.base}: ${describeNetError(err)}`),
      )
    }
    this.resolve()
    if (res.destroyed || res.writableEnded) return
    // The error body could not be read whole: answer with what there is.
    if (mode === Mode.StreamError) return this.answerStreamError(this.errorText())
    if (mode === Mode.PlainError) return this.answerPlainError(this.errorText())
    this.endMidAnswer(reason)
  }

  /** The upstream went away mid-answer: end the client's stream with an error, never leave it hanging. */
  private endMidAnswer(reason: Error): void {
    const res = this.res
    this.opts.logger.warn('upstream ended mid-response', { path: this.opts.path, upstream: this.up.name })
    if (!this.sse) {
      res.destroy()
      return
    }
    const rest = this.meteredChunks()
    if (rest) res.write(rest)
    const message =
      reason instanceof ApiError
        ? reason.message
        : `${this.up.name} closed the connection before the answer was complete`
    res.end(`\n\nevent: error\ndata: ${JSON.stringify({ error: { message, type: 'upstream_error', code: 502 } })}\n\n`)
  }

  /** Spec 1, 6.1: exactly one SSE event named `error` carrying the upstream's error, then the end. */
  private answerStreamError(text: string): void {
    this.res.writeHead(200, sseHeaders())
    this.opts.exchange?.markHeaders()
    this.res.end(`event: error\ndata: ${errorEventData(this.status, text, this.up.name)}\n\n`)
  }

  /** An upstream's error answer in OpenAI's shape; passed on as it is when it already has that shape. */
  private answerPlainError(text: string): void {
    const res = this.res
    if (hasErrorObject(text)) {
      res.writeHead(this.status, safeHeaders(this.headers, ['content-length']))
      res.end(text)
      return
    }
    const detail = `${this.up.name} answered HTTP ${this.status}: ${upstreamDetail(text)}`
    sendError(res, new ApiError('upstream_error', detail, { status: this.status }), 'openai')
  }

  /** The chunks gathered for the client, through the usage meter on an event stream; undefined when none are left. */
  private meteredChunks(): Buffer | undefined {
    const out = this.takeChunks()
    const usage = this.opts.usage
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

  /** Ends the relay once: the deadline and the listeners on the client's response go. */
  private finish(): void {
    this.mode = Mode.Done
    clearTimeout(this.timer)
    this.res.off('close', this.onClientClose)
    this.res.off('drain', this.onDrain)
  }
}

function flushRelay(relay: Relay): void {
  relay.flush()
}

function expire(relay: Relay): void {
  relay.expire()
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

export function sseHeaders(): http.OutgoingHttpHeaders {
  return {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  }
}

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
