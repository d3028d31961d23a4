import { Worker } from 'node:worker_threads'
import { ApiError } from '../../contract/errors'
import { jsonDeeperThan, jsonTooDeep, malformedJson } from '../../http/body'
import { notAnObject, readRelayRequest, type RelayRequest } from './wire'

/**
 * Reads `model`, `stream` and `stream_options` of a relayed body with JSON.parse (docs/design/gateway.md,
 * Reading `model` and `stream`). A body up to INLINE_PARSE_BYTES is parsed on the main thread, as
 * every other JSON body is; a larger one in a worker thread, so a 60 MB chat body does not hold the
 * event loop for the second its depth check and JSON.parse take (issue 42 measured 0.6–2 s). A
 * large body lives in memory shared with the worker (sharedBody, joinShared): the worker reads the
 * same bytes that go upstream, and the main thread copies nothing (a copy of 60 MB into a fresh
 * buffer held the loop 0.5–0.9 s on a loaded machine). Nothing writes a body once it has arrived.
 */

/** Bodies up to this size are parsed inline: JSON.parse of 256 KiB takes about a millisecond. */
export const INLINE_PARSE_BYTES = 256 * 1024

/**
 * A buffer of `length` bytes the parser's worker can read in place. Not filled: the memory comes
 * zeroed from the system page by page as it is first written, so nothing is paid up front.
 */
export function sharedBody(length: number): Buffer {
  return Buffer.from(new SharedArrayBuffer(length))
}

/** `parts` (`total` bytes) as one buffer: a large body straight into shared memory, so it is copied once. */
export function joinShared(parts: readonly Buffer[], total: number): Buffer {
  if (parts.length === 1 && total <= INLINE_PARSE_BYTES) return parts[0]!
  if (total <= INLINE_PARSE_BYTES) return Buffer.concat(parts, total)
  const out = sharedBody(total)
  let at = 0
  for (const p of parts) at += p.copy(out, at)
  return out
}

/** What the worker answers for one body. */
type Parsed =
  | { readonly id: number; readonly model: string | null; readonly stream: boolean; readonly streamOptions: unknown }
  | { readonly id: number; readonly error: 'deep' | 'malformed' | 'object' }

/**
 * The worker's program. It runs from this text (a bundle has no separate file to point a Worker
 * at); the depth check is http/body.ts's own function, included by its source.
 */
function workerSource(): string {
  return `
const { parentPort } = require('node:worker_threads')
const jsonDeeperThan = ${jsonDeeperThan.toString()}
parentPort.on('message', ({ id, bytes, maxDepth }) => {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')
  if (jsonDeeperThan(text, maxDepth)) return parentPort.postMessage({ id, error: 'deep' })
  let v
  try {
    v = JSON.parse(text)
  } catch {
    return parentPort.postMessage({ id, error: 'malformed' })
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return parentPort.postMessage({ id, error: 'object' })
  parentPort.postMessage({
    id,
    model: typeof v.model === 'string' ? v.model : null,
    stream: v.stream === true,
    streamOptions: v.stream_options,
  })
})`
}

/**
 * The toucher's program: faults in every 4 KiB page of a fresh body buffer while the event loop
 * copies the body's chunks into it. Adding 0 atomically to one word per page writes the page (so
 * the system supplies it here, not on the loop) without changing a byte: a chunk copied into the
 * same word before or after keeps its bytes.
 */
const TOUCHER_SOURCE = `
const { parentPort } = require('node:worker_threads')
parentPort.on('message', ({ id, bytes }) => {
  const words = new Int32Array(bytes.buffer, 0, bytes.buffer.byteLength >> 2)
  for (let i = 0; i < words.length; i += 1024) Atomics.add(words, i, 0)
  parentPort.postMessage(id)
})`

interface Waiting {
  readonly resolve: (m: Parsed) => void
  readonly reject: (err: unknown) => void
  readonly timer: NodeJS.Timeout
}

export interface RelayBodyParserOptions {
  readonly maxDepth: number
  /** How long one body's parse may take before every parse in flight is refused and the worker replaced. */
  readonly timeoutMs: number
}

/**
 * One worker, started on the first large body and kept; parses run one after another in it. A
 * second, the toucher, faults in fresh body buffers as they fill (touch).
 */
export class RelayBodyParser {
  private worker: Worker | null = null
  private toucher: Worker | null = null
  /** Touches in flight, by id, with what resolves each. */
  private readonly touching = new Map<number, () => void>()
  private readonly waiting = new Map<number, Waiting>()
  private next = 1

  constructor(private readonly opts: RelayBodyParserOptions) {}

  /** What the relay reads of `raw`, or the same 400s as every JSON body gets. */
  parse(raw: Buffer): Promise<RelayRequest> {
    if (raw.length <= INLINE_PARSE_BYTES) {
      try {
        return Promise.resolve(readRelayRequest(raw))
      } catch (err) {
        return Promise.reject(err)
      }
    }
    // Shared memory is read by the worker in place; any other buffer is copied once into it.
    const bytes = raw.buffer instanceof SharedArrayBuffer ? raw : joinShared([raw], raw.length)
    return this.ask(bytes).then((m) => this.answer(m))
  }

  /**
   * Has the toucher fault in every page of a fresh sharedBody while the caller copies the body into
   * it, so the system supplies the memory to the toucher's thread, not to the event loop (60 MB of
   * fresh memory written on the main thread cost 0.9–1.2 s of page faults on a loaded machine, up
   * to 170 ms for one 64 KiB chunk). Nothing waits for it: a page the copy reaches first is faulted
   * in by the copy. A thread of its own, so a long parse never holds it up. Resolves when done.
   */
  touch(body: Buffer): Promise<void> {
    const id = this.next++
    return new Promise((resolve) => {
      this.touching.set(id, resolve)
      this.ensureToucher().postMessage({ id, bytes: body })
    })
  }

  private ensureToucher(): Worker {
    if (this.toucher !== null) return this.toucher
    const w = new Worker(TOUCHER_SOURCE, { eval: true })
    w.unref()
    w.on('message', (id: number) => {
      this.touching.get(id)?.()
      this.touching.delete(id)
    })
    // Touching is only ahead of time: without it the copies fault the pages in themselves.
    const gone = (): void => {
      if (this.toucher === w) this.toucher = null
      for (const done of this.touching.values()) done()
      this.touching.clear()
    }
    w.on('error', gone)
    w.on('exit', gone)
    this.toucher = w
    return w
  }

  private ask(bytes: Buffer): Promise<Parsed> {
    const id = this.next++
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.giveUp(), this.opts.timeoutMs)
      timer.unref()
      this.waiting.set(id, { resolve, reject, timer })
      this.ensureWorker().postMessage({ id, bytes, maxDepth: this.opts.maxDepth })
    })
  }

  /** Stops the worker; parses in flight are refused. */
  close(): void {
    this.failAll(new ApiError('unavailable', 'the gateway is stopping', { status: 503 }))
    void this.worker?.terminate()
    this.worker = null
    void this.toucher?.terminate()
    this.toucher = null
  }

  private ensureWorker(): Worker {
    if (this.worker !== null) return this.worker
    const w = new Worker(workerSource(), { eval: true })
    w.unref()
    w.on('message', (m: Parsed) => this.settle(m))
    w.on('error', (err) => {
      if (this.worker === w) this.worker = null
      this.failAll(err)
    })
    w.on('exit', () => {
      if (this.worker === w) this.worker = null
      this.failAll(new Error('the body parser stopped'))
    })
    this.worker = w
    return w
  }

  private settle(m: Parsed): void {
    const w = this.waiting.get(m.id)
    if (w === undefined) return
    this.waiting.delete(m.id)
    clearTimeout(w.timer)
    w.resolve(m)
  }

  /** What the worker read of a body, or the same 400 the inline reading gives. */
  private answer(m: Parsed): RelayRequest {
    if ('model' in m) return { model: m.model, stream: m.stream, streamOptions: m.streamOptions }
    throw m.error === 'deep'
      ? jsonTooDeep(this.opts.maxDepth)
      : m.error === 'malformed'
        ? malformedJson()
        : notAnObject()
  }

  /** A parse overran its time: the worker is replaced, and what waited on it is refused (retry later). */
  private giveUp(): void {
    const w = this.worker
    this.worker = null
    this.failAll(
      new ApiError('unavailable', 'the request body could not be read in time; retry later', { status: 503 }),
    )
    void w?.terminate()
  }

  private failAll(err: unknown): void {
    for (const w of this.waiting.values()) {
      clearTimeout(w.timer)
      w.reject(err)
    }
    this.waiting.clear()
  }
}
