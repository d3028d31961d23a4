import type { Handlers } from '../contract/define'
import type { EventName, EventPayload, EventStreamItem, eventsContract, PushEvent, Resync } from '../contract/events'
import type { Clock } from '../lib/clock'

/** What a service needs to announce a change: publishing, nothing else. */
export interface EventPublisher {
  publish<K extends EventName>(name: K, data: EventPayload<K>): void
}

/** Events kept for resuming streams; at a few per minute this is hours, at worst minutes. */
export const EVENT_BUFFER_SIZE = 1000

/**
 * The typed event bus: services publish, streams read. The last events are kept in a ring buffer
 * with increasing `seq` so a client that reconnects with the last `seq` it saw gets what it missed.
 */
export class EventBus implements EventPublisher {
  private readonly ring: PushEvent[] = []
  private seq = 0
  private readonly waiters = new Set<() => void>()
  private listening = 0
  private closed = false
  private readonly subscribers = new Set<(ev: PushEvent) => void>()

  constructor(
    private readonly clock: Clock,
    private readonly capacity = EVENT_BUFFER_SIZE,
  ) {}

  publish<K extends EventName>(name: K, data: EventPayload<K>): void {
    this.seq += 1
    this.ring.push({ seq: this.seq, at: this.clock.now(), name, data } as PushEvent)
    if (this.ring.length > this.capacity) this.ring.splice(0, this.ring.length - this.capacity)
    for (const fn of this.subscribers) fn(this.ring[this.ring.length - 1]!)
    for (const wake of [...this.waiters]) wake()
  }

  /** Ends every open stream (the core is stopping): clients reconnect to whatever serves them next. */
  close(): void {
    this.closed = true
    for (const wake of [...this.waiters]) wake()
  }

  /**
   * Calls `fn` with every event as it is published (in-process consumers such as metrics; not
   * counted as a listener). Returns the unsubscribe.
   */
  subscribe(fn: (ev: PushEvent) => void): () => void {
    this.subscribers.add(fn)
    return () => this.subscribers.delete(fn)
  }

  /** The seq of the newest event (0 before the first). */
  get lastSeq(): number {
    return this.seq
  }

  /** How many streams are open now (the node monitor probes more often while someone watches). */
  get listeners(): number {
    return this.listening
  }

  /**
   * Events after `after` that are still held, then live ones until the signal aborts. Without
   * `after` the stream starts live. A cursor the buffer cannot serve (older than what is held, or
   * ahead of this run's events) first yields a `resync` and then continues live.
   */
  async *stream(after: number | undefined, signal: AbortSignal): AsyncGenerator<EventStreamItem> {
    this.listening += 1
    try {
      let next = after ?? this.seq
      if (next > this.seq) {
        yield this.resync('restart')
        next = this.seq
      }
      while (!signal.aborted && !this.closed) {
        // A cursor older than the buffer (given, or fallen behind while the reader was slow).
        if (next < (this.ring[0]?.seq ?? 1) - 1) {
          yield this.resync('gap')
          next = this.seq
        }
        const pending = this.since(next)
        for (const ev of pending) {
          next = ev.seq
          yield ev
          if (signal.aborted) return
        }
        if (pending.length === 0 && !this.closed) await this.nextPublish(signal)
      }
    } finally {
      this.listening -= 1
    }
  }

  private resync(reason: Resync['data']['reason']): Resync {
    return { seq: this.seq, at: this.clock.now(), name: 'resync', data: { reason } }
  }

  private since(seq: number): PushEvent[] {
    // The ring is ordered by seq with no holes, so the first wanted event is at a known index.
    const first = this.ring[0]?.seq
    if (first === undefined || seq >= this.seq) return []
    return this.ring.slice(Math.max(0, seq + 1 - first))
  }

  private nextPublish(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = (): void => {
        this.waiters.delete(wake)
        signal.removeEventListener('abort', wake)
        resolve()
      }
      this.waiters.add(wake)
      signal.addEventListener('abort', wake, { once: true })
    })
  }
}

/** The stream method's handler over the bus. */
export function eventHandlers(bus: EventBus): Handlers<typeof eventsContract> {
  return { streamEvents: ({ after }, ctx) => bus.stream(after, ctx.signal) }
}
