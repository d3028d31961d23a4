import type http from 'node:http'
import type { Clock } from '../../lib/clock'
import { requestState } from '../../http/requestState'
import { identityLabel, type ConsumerIdentity } from '../keys/consumerKeyStore'
import { attachUsageMeter, UsageMeter, type RequestUsage } from './usageMeter'

/** One gateway request as the dashboard's live log shows it. */
export interface RequestEntry {
  readonly seq: number
  readonly at: number
  readonly method: string
  readonly path: string
  readonly status: number
  /** Request start to response end (ms). */
  readonly latency_ms: number
  /** Request start to response headers (ms); null when none were sent. */
  readonly ttfb_ms: number | null
  /** Response bytes on the wire (headers included). */
  readonly bytes: number
  readonly streamed: boolean
  /** The client went away before the response ended. */
  readonly aborted: boolean
  /** Made from the dashboard's playground rather than by a LAN client. */
  readonly playground: boolean
  /** The consumer key's name, `(legacy)`, `(admin)`, `(open)`; null when not a consumer request. */
  readonly key: string | null
  /** Request start to the first text chunk of a streamed answer (ms). */
  readonly ttft_ms: number | null
  readonly tokens_per_s: number | null
  readonly prompt_tokens: number | null
  readonly completion_tokens: number | null
  /** Completion tokens counted from chunks (the upstream sent no usage): an estimate. */
  readonly tokens_estimated: boolean
  /** The placement that served it (its id, e.g. `node3+node4`); null when no placement did. */
  readonly placement: string | null
}

/** The fields an entry may leave out (callers outside the raw routes have no key or usage). */
type OptionalField =
  | 'playground'
  | 'key'
  | 'ttft_ms'
  | 'tokens_per_s'
  | 'prompt_tokens'
  | 'completion_tokens'
  | 'tokens_estimated'
  | 'placement'

type EntryInput = Omit<RequestEntry, 'seq' | 'at' | OptionalField> & Partial<Pick<RequestEntry, OptionalField>>

/** Told of every finished raw-route exchange: per-key usage and metrics. */
export type RequestObserver = (
  entry: RequestEntry,
  usage: RequestUsage | null,
  who: ConsumerIdentity | undefined,
) => void

/** Histogram bucket upper bounds (ms); the last bucket is open-ended. */
export const LATENCY_BOUNDS_MS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000, 60000]

/** The last N requests and a latency histogram over them. In memory: it is a live view, not an audit trail. */
export class RequestLog {
  private readonly ring: RequestEntry[] = []
  private seq = 0
  private total = 0
  private readonly observers: RequestObserver[] = []
  private streamsOpen = 0

  constructor(
    private readonly clock: Clock,
    private readonly capacity = 500,
    /** Usage accounting (tokens, TTFT, tokens/s, per key); off only to measure what it costs. */
    private readonly accounting = true,
  ) {}

  observe(fn: RequestObserver): void {
    this.observers.push(fn)
  }

  /** Streamed answers being sent now. */
  get openStreams(): number {
    return this.streamsOpen
  }

  /** Usage accounting is on (the request log hands each exchange a usage meter). */
  get accounts(): boolean {
    return this.accounting
  }

  /** Tells every observer of a finished exchange (per-key usage, metrics). */
  notify(entry: RequestEntry, usage: RequestUsage | null, who: ConsumerIdentity | undefined): void {
    for (const fn of this.observers) fn(entry, usage, who)
  }

  streamOpened(): void {
    this.streamsOpen++
  }

  streamClosed(): void {
    this.streamsOpen--
  }

  add(e: EntryInput): RequestEntry {
    // Every field written in one order, so every entry has the same shape.
    const entry: RequestEntry = {
      seq: ++this.seq,
      at: this.clock.now(),
      method: e.method,
      path: e.path,
      status: e.status,
      latency_ms: e.latency_ms,
      ttfb_ms: e.ttfb_ms,
      bytes: e.bytes,
      streamed: e.streamed,
      aborted: e.aborted,
      playground: e.playground ?? false,
      key: e.key ?? null,
      ttft_ms: e.ttft_ms ?? null,
      tokens_per_s: e.tokens_per_s ?? null,
      prompt_tokens: e.prompt_tokens ?? null,
      completion_tokens: e.completion_tokens ?? null,
      tokens_estimated: e.tokens_estimated ?? false,
      placement: e.placement ?? null,
    }
    // A fixed ring: the slot of entry n is n % capacity, so adding never shifts the array.
    this.ring[(entry.seq - 1) % this.capacity] = entry
    this.total++
    return entry
  }

  /** Newest first; only entries after `afterSeq` when given. */
  list(limit = 100, afterSeq = 0): RequestEntry[] {
    const out: RequestEntry[] = []
    const oldest = Math.max(1, this.seq - this.capacity + 1)
    for (let seq = this.seq; seq >= oldest && out.length < limit; seq--) {
      const e = this.ring[(seq - 1) % this.capacity]!
      if (e.seq <= afterSeq) break
      out.push(e)
    }
    return out
  }

  histogram(): { bounds_ms: number[]; counts: number[] } {
    const counts = new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0)
    for (const e of this.ring) {
      let i = LATENCY_BOUNDS_MS.findIndex((b) => e.latency_ms <= b)
      if (i === -1) i = LATENCY_BOUNDS_MS.length
      counts[i]!++
    }
    return { bounds_ms: [...LATENCY_BOUNDS_MS], counts }
  }

  get totalCount(): number {
    return this.total
  }

  /** Starts recording one raw-route exchange; it is added to the log when the response closes. */
  watch(req: http.IncomingMessage, res: http.ServerResponse, path: string): Exchange {
    const exchange = new Exchange(this, req, res, path)
    res.on('close', () => exchange.closed()) // a response closes once
    return exchange
  }

  /**
   * Starts recording an exchange whose owner already listens for the response's close (the
   * relay): it calls `closed()` then, once. One listener fewer per request on the hot path.
   */
  begin(req: http.IncomingMessage, res: http.ServerResponse, path: string): Exchange {
    return new Exchange(this, req, res, path)
  }
}

/**
 * One gateway request on its way through: the route marks when its headers went out and whether
 * the answer is a stream, and `closed` (on the response's close) is the one place a finished
 * request lands in the log. No wrapper around `res.writeHead`: routes that stream say so.
 * Bytes are the socket's written-bytes delta: HTTP/1.1 exchanges on a socket are sequential.
 */
export class Exchange {
  private readonly t0 = performance.now()
  private readonly socket: http.IncomingMessage['socket']
  private readonly written0: number
  private headersAt = -1
  private streamed = false
  private placement: string | null = null
  /** Tokens, TTFT and tokens/s of this exchange (also in the request state, for the raw routes). */
  readonly usage: UsageMeter | undefined

  constructor(
    private readonly log: RequestLog,
    private readonly req: http.IncomingMessage,
    private readonly res: http.ServerResponse,
    private readonly path: string,
  ) {
    this.socket = req.socket
    this.written0 = req.socket.bytesWritten
    this.usage = log.accounts ? new UsageMeter(this.t0) : undefined
    if (this.usage) attachUsageMeter(res, this.usage)
  }

  /** The response's headers were just written (time to first byte). */
  markHeaders(): void {
    if (this.headersAt < 0) this.headersAt = performance.now()
  }

  /** The request went to this placement (its id): the entry, usage and metrics carry it. */
  routedTo(placement: string): void {
    this.placement = placement
  }

  markStreamed(): void {
    if (!this.streamed) this.log.streamOpened()
    this.streamed = true
  }

  /** The response closed: the exchange lands in the log (call once). */
  closed(): void {
    const end = performance.now()
    if (this.streamed) this.log.streamClosed()
    const usage = this.usage?.result() ?? null
    const who = requestState(this.res).consumer
    const entry = this.log.add({
      ...this.timing(end),
      key: identityLabel(who),
      ttft_ms: usage?.ttft_ms ?? null,
      tokens_per_s: usage?.tokens_per_s ?? null,
      prompt_tokens: usage?.prompt_tokens ?? null,
      completion_tokens: usage?.completion_tokens ?? null,
      tokens_estimated: usage?.tokens_estimated ?? false,
      placement: this.placement,
    })
    this.log.notify(entry, usage, who)
  }

  /** What the socket saw: status, latency, first byte, bytes, and whether the answer was cut short. */
  private timing(end: number) {
    const { res } = this
    // An answer written whole (JSON, errors) sends its headers with its body: first byte ≈ end.
    const headersAt = this.headersAt >= 0 ? this.headersAt : res.headersSent ? end : -1
    return {
      method: this.req.method ?? 'GET',
      path: this.path,
      status: res.headersSent ? res.statusCode : 499,
      latency_ms: round(end - this.t0),
      ttfb_ms: headersAt < 0 ? null : round(headersAt - this.t0),
      bytes: Math.max(0, this.socket.bytesWritten - this.written0),
      streamed: this.streamed,
      aborted: !res.writableFinished,
    }
  }
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100
}
