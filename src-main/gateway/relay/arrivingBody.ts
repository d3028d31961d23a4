import { INLINE_PARSE_BYTES, joinShared, type RelayBodyParser } from './relayBodyParser'

/**
 * A relayed body as its chunks arrive. A large one with a declared length goes into one shared
 * buffer (BodyReservation.bufferAhead) as each chunk comes, from the first: a buffer an earlier body
 * left in memory (bodyBuffers.ts), or a fresh one whose pages the parser's toucher faults in ahead
 * of the copies (RelayBodyParser.touch), so the event loop neither faults in nor copies 60 MB at
 * once. Each chunk's own memory is given back as soon as it is copied (giveBackChunk).
 * Any other body is its chunks, joined at the end.
 */
export class ArrivingBody {
  private parts: Buffer[] = []
  /** The shared buffer the chunks are copied into as they come. */
  private body: Buffer | null = null
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
   * The chunks go into `buffer` (the declared length's) from now on. A fresh one (not `warmed`)
   * has its pages faulted in by the parser's toucher meanwhile, without changing a byte of it.
   */
  allocatedAhead(buffer: Buffer, warmed = false): void {
    let at = 0
    for (const p of this.parts) at += p.copy(buffer, at)
    this.parts = []
    this.body = buffer
    if (!warmed) void this.parser.touch(buffer)
  }

  /** One more chunk; Node's parser never passes more bytes than a declared length. */
  add(chunk: Buffer): void {
    const at = this.received
    this.received += chunk.length
    if (this.body === null) return void this.parts.push(chunk)
    chunk.copy(this.body, at)
    giveBackChunk(chunk) // its length is 0 from here on
  }

  /** The whole body once it has ended; null when it was dropped meanwhile. */
  take(): Buffer | null {
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

/** ES2024's ArrayBuffer.prototype.transfer, which the project's ES2023 library does not declare. */
type Transferable = ArrayBuffer & { transfer?: (length: number) => ArrayBuffer }

/**
 * Frees a chunk's memory once it is copied, when the chunk is the whole of its own ArrayBuffer
 * (as Node's HTTP parser gives each body chunk). A chunk's few bytes of JavaScript object hold
 * 64 KiB of memory outside V8's heap that V8 frees only when it collects the object, and V8 counts
 * such external memory: 60 MB of chunks held until then made it run full mark-compact collections
 * on the event loop, two or three per body. Detaching the chunk (`transfer(0)`) frees the memory
 * at once, so the chunks of a large body never add up. Only the relay reads a relayed body.
 */
export function giveBackChunk(chunk: Buffer): void {
  const memory = chunk.buffer as Transferable
  if (chunk.byteOffset !== 0 || chunk.byteLength !== memory.byteLength) return
  if (!(memory instanceof ArrayBuffer) || typeof memory.transfer !== 'function') return
  memory.transfer(0)
}
