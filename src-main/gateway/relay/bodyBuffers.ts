import { sharedBody } from './relayBodyParser'

/** How long idle body buffers are kept after the last one was lent or given back. */
export const BODY_BUFFERS_IDLE_MS = 60_000

/** A buffer lent for one body: `view` is the body's length, `whole` what goes back; `warmed` when its pages are in memory. */
export interface LentBuffer {
  readonly view: Buffer
  readonly whole: Buffer
  readonly warmed: boolean
}

/**
 * Large body buffers (shared memory, see relayBodyParser.ts sharedBody) kept for the next large
 * body once a relayed call has ended well. Fresh memory is what a 60 MB body costs the process:
 * the pages faulted in by the parser's toucher (~2 s of its CPU on the loaded 2-core machine,
 * taken from the event loop's core) and the external memory V8 answers with garbage collections
 * on the loop. A buffer given back is already in memory: the next body is copied straight in. At
 * most `maxIdleBytes` wait idle, and none after BODY_BUFFERS_IDLE_MS.
 */
export class BodyBuffers {
  private idle: Buffer[] = []
  private idleBytes = 0
  private sweep: NodeJS.Timeout | null = null

  constructor(private readonly maxIdleBytes: number) {}

  /** The smallest idle buffer that holds `length` bytes, else a fresh one (not warmed). */
  lend(length: number): LentBuffer {
    let best = -1
    for (let i = 0; i < this.idle.length; i++) {
      const b = this.idle[i]!
      if (b.length >= length && (best === -1 || b.length < this.idle[best]!.length)) best = i
    }
    if (best === -1) {
      const whole = sharedBody(length)
      return { view: whole, whole, warmed: false }
    }
    const whole = this.idle.splice(best, 1)[0]!
    this.idleBytes -= whole.length
    return { view: whole.length === length ? whole : whole.subarray(0, length), whole, warmed: true }
  }

  /**
   * Takes back a buffer nothing reads or writes any more (its call ended with the answer, the parse
   * long done); dropped when the idle ones already hold maxIdleBytes.
   */
  giveBack(whole: Buffer): void {
    if (this.idleBytes + whole.length > this.maxIdleBytes) return
    this.idle.push(whole)
    this.idleBytes += whole.length
    if (this.sweep === null) {
      this.sweep = setTimeout(() => this.dropIdle(), BODY_BUFFERS_IDLE_MS)
      this.sweep.unref()
    } else this.sweep.refresh()
  }

  /** Bytes of buffers waiting idle. */
  get held(): number {
    return this.idleBytes
  }

  /** Lets the idle buffers go (the memory returns to the system once V8 collects them). */
  dropIdle(): void {
    if (this.sweep !== null) clearTimeout(this.sweep)
    this.sweep = null
    this.idle = []
    this.idleBytes = 0
  }
}
