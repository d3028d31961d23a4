import { INLINE_PARSE_BYTES, joinShared, type RelayBodyParser } from './relayBodyParser'

/**
 * A relayed body as its chunks arrive. A large one with a declared length goes into one shared
 * buffer (BodyReservation.bufferAhead) that the parser's worker first writes through
 * (RelayBodyParser.warm), or that an earlier body left in memory (bodyBuffers.ts), so neither
 * filling it nor parsing it makes the event loop fault in or copy 60 MB at once; the chunks that
 * arrive meanwhile are kept and copied in once it is ready.
 * Any other body is its chunks, joined at the end.
 */
export class ArrivingBody {
  private parts: Buffer[] = []
  /** The shared buffer once the worker has written through it; chunks are copied into it as they come. */
  private body: Buffer | null = null
  private warming: Promise<void> | null = null
  private received = 0
  private dropped = false

  constructor(private readonly parser: RelayBodyParser) {}

  /** Bytes arrived so far. */
  get length(): number {
    return this.received
  }

  /** True when a body declaring `length` bytes is read into a buffer allocated ahead. */
  static wantsBufferAhead(length: number): boolean {
    return length > INLINE_PARSE_BYTES
  }

  /**
   * Starts warming `buffer` (the declared length's); the chunks go into it once the worker has
   * written it through, or at once when it is `warmed` already (a reused buffer).
   */
  allocatedAhead(buffer: Buffer, warmed = false): void {
    if (warmed) {
      let at = 0
      for (const p of this.parts) at += p.copy(buffer, at)
      this.parts = []
      this.body = buffer
      return
    }
    this.warming = this.parser.warm(buffer).then((warmed) => {
      this.warming = null
      if (!warmed || this.dropped) return
      let at = 0
      for (const p of this.parts) at += p.copy(buffer, at)
      this.parts = []
      this.body = buffer
    })
  }

  /** One more chunk; Node's parser never passes more bytes than a declared length. */
  add(chunk: Buffer): void {
    if (this.body !== null) chunk.copy(this.body, this.received)
    else this.parts.push(chunk)
    this.received += chunk.length
  }

  /** The whole body once it has ended; null when it was dropped meanwhile. */
  async take(): Promise<Buffer | null> {
    if (this.warming !== null) await this.warming
    if (this.dropped) return null
    const body = this.body
    const parts = this.parts
    this.drop()
    if (body !== null) return body.length === this.received ? body : body.subarray(0, this.received)
    return joinShared(parts, this.received)
  }

  /** Lets go of the bytes (the request ended or failed). */
  drop(): void {
    this.dropped = true
    this.body = null
    this.parts = []
  }
}
