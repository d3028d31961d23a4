import type http from 'node:http'
import type { Response } from 'express'
import type { Clock } from '../core/clock'
import { identityLabel, type ConsumerIdentity } from './consumerKeys'
import { UsageMeter, type RequestUsage } from './usageMeter'

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
  /** The consumer key's name, `(legacy)`, `(admin)`, `(open)`; null when not a consumer request. */
  readonly key: string | null
  /** Request start to the first text chunk of a streamed answer (ms). */
  readonly ttft_ms: number | null
  readonly tokens_per_s: number | null
  readonly prompt_tokens: number | null
  readonly completion_tokens: number | null
  /** Completion tokens counted from chunks (the upstream sent no usage): an estimate. */
  readonly tokens_estimated: boolean
}

/** What an entry may leave out (callers outside the raw routes have no key or usage). */
type EntryInput = Omit<
  RequestEntry,
  'seq' | 'at' | 'key' | 'ttft_ms' | 'tokens_per_s' | 'prompt_tokens' | 'completion_tokens' | 'tokens_estimated'
> &
  Partial<
    Pick<RequestEntry, 'key' | 'ttft_ms' | 'tokens_per_s' | 'prompt_tokens' | 'completion_tokens' | 'tokens_estimated'>
  >

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

  add(e: EntryInput): RequestEntry {
    const entry: RequestEntry = {
      key: null,
      ttft_ms: null,
      tokens_per_s: null,
      prompt_tokens: null,
      completion_tokens: null,
      tokens_estimated: false,
      ...e,
      seq: ++this.seq,
      at: this.clock.now(),
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

  /**
   * Watches one raw-route exchange and records it when the response ends or the client leaves.
   * Bytes are the socket's written-bytes delta: HTTP/1.1 exchanges on a socket are sequential.
   */
  watch(req: http.IncomingMessage, res: Response, path: string): { markStreamed(): void } {
    const t0 = performance.now()
    const sock = req.socket
    const written0 = sock.bytesWritten
    let ttfb: number | null = null
    let streamed = false
    const locals = res.locals as { consumer?: ConsumerIdentity; usage?: UsageMeter } // http/requestState.ts
    const meter = this.accounting ? new UsageMeter(t0) : undefined
    locals.usage = meter
    const writeHead = res.writeHead.bind(res) as (...a: unknown[]) => http.ServerResponse
    res.writeHead = ((...args: unknown[]) => {
      if (ttfb === null) ttfb = performance.now() - t0
      return writeHead(...args)
    }) as typeof res.writeHead
    res.once('close', () => {
      if (streamed) this.streamsOpen--
      const usage = meter?.result() ?? null
      const who = locals.consumer
      const entry = this.add({
        method: req.method ?? 'GET',
        path,
        status: res.headersSent ? res.statusCode : 499,
        latency_ms: round(performance.now() - t0),
        ttfb_ms: ttfb === null ? null : round(ttfb),
        bytes: Math.max(0, sock.bytesWritten - written0),
        streamed,
        aborted: !res.writableFinished,
        key: identityLabel(who),
        ttft_ms: usage?.ttft_ms ?? null,
        tokens_per_s: usage?.tokens_per_s ?? null,
        prompt_tokens: usage?.prompt_tokens ?? null,
        completion_tokens: usage?.completion_tokens ?? null,
        tokens_estimated: usage?.tokens_estimated ?? false,
      })
      for (const fn of this.observers) fn(entry, usage, who)
    })
    return {
      markStreamed: () => {
        if (!streamed) this.streamsOpen++
        streamed = true
      },
    }
  }
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100
}
