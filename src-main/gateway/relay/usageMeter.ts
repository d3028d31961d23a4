import type { Readable } from 'node:stream'
import { createParser, type EventSourceMessage, type EventSourceParser } from 'eventsource-parser'
import type { RelayRequest } from './wire'

/**
 * What one gateway request used (issue 16): tokens from the upstream's `usage`, time to first
 * token and tokens per second on streamed answers, audio seconds transcribed and characters
 * synthesized. When a stream's upstream sends no usage, completion tokens are counted from the
 * chunks that carried text and marked `tokens_estimated`: an estimate, never shown as exact.
 */
export interface RequestUsage {
  readonly prompt_tokens: number | null
  readonly completion_tokens: number | null
  readonly tokens_estimated: boolean
  /** Request start to the first chunk carrying text (ms); null when not streamed or no text came. */
  readonly ttft_ms: number | null
  /** Completion tokens over the time from the first to the last text chunk; null when it cannot be told. */
  readonly tokens_per_s: number | null
  /** First to last text chunk (s): the denominator of tokens_per_s. */
  readonly generation_s: number
  readonly audio_seconds: number
  readonly speech_characters: number
}

/** A non-streamed answer body is read for `usage`/`duration` up to this size; larger ones are not parsed. */
const BODY_PEEK_LIMIT = 4 * 1024 * 1024
const NOTHING = Buffer.alloc(0)
/** The `usage: null` member an OpenAI-style engine adds to every chunk once asked, with the comma before it. */
const NULL_USAGE = /,\s*"usage"\s*:\s*null(?=\s*[,}])/

/** What the meter reads of an event's or an answer's JSON; anything else in it is ignored. */
interface Answer {
  usage?: unknown
  choices?: unknown
  duration?: unknown
}

const STREAM_USAGE_MEMBER = Buffer.from(',"stream_options":{"include_usage":true}')

/**
 * Asks a streaming chat or completion for `stream_options.include_usage` when the client did not
 * ask itself; returns the bytes to send upstream and whether the extra usage chunk must be stripped.
 */
export function withStreamUsage(request: RelayRequest, raw: Buffer): { raw: Buffer; injected: boolean } {
  if (!request.stream) return { raw, injected: false }
  const opts = request.streamOptions
  if (opts !== undefined && (opts === null || typeof opts !== 'object' || Array.isArray(opts)))
    return { raw, injected: false }
  if (opts && (opts as Record<string, unknown>).include_usage !== undefined) return { raw, injected: false }
  if (opts === undefined) {
    // The client's bytes stay as they are: the member is added before the object's closing brace.
    let end = raw.length - 1
    while (end > 0 && raw[end] !== 0x7d) end--
    return { raw: Buffer.concat([raw.subarray(0, end), STREAM_USAGE_MEMBER, raw.subarray(end)]), injected: true }
  }
  // The client's own stream options (rare): the body is rebuilt with include_usage among them.
  const body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>
  const next = { ...body, stream_options: { ...(opts as Record<string, unknown> | undefined), include_usage: true } }
  return { raw: Buffer.from(JSON.stringify(next)), injected: true }
}

/**
 * The per-request meter the relay feeds: `onSseChunk` for every event-stream chunk (it returns
 * the bytes to pass on: the same chunk, or, when Tandem asked for usage itself, the whole events
 * so far without the extra usage event), `onBodyChunk` and `endBody` for a plain answer,
 * `result()` at the end. Events are read with eventsource-parser and their data with JSON.parse.
 */
export class UsageMeter {
  private prompt: number | null = null
  private completion: number | null = null
  private textChunks = 0
  private firstTextAt: number | null = null
  private lastTextAt: number | null = null
  private audio = 0
  private characters = 0
  private streamed = false
  private stripUsage = false
  private readonly parser: EventSourceParser
  /** Text of a stream passed through unchanged: a multi-byte character may be split across chunks. */
  private readonly decoder = new TextDecoder()
  /** When stripping: the bytes of the unfinished last event of the reads so far. */
  private pending: Buffer = NOTHING
  /** The data of the last event the parser gave, read by `readEvent`. */
  private lastData: string | null = null
  private bodyParts: Buffer[] = []
  private bodySize = 0

  constructor(
    /** performance.now() when the request arrived. */
    private readonly startedAt: number,
    private readonly now: () => number = monotonicNow,
  ) {
    this.parser = createParser({ onEvent: (event) => this.onEvent(event) })
  }

  /** The stream's usage event was asked for by Tandem: it is taken out of what the client receives. */
  stripInjectedUsage(): void {
    this.stripUsage = true
  }

  /** The request bytes to send upstream: a stream's token counts come from the usage event, asked for here when the client did not. */
  prepareRequest(request: RelayRequest, raw: Buffer): Buffer {
    const out = withStreamUsage(request, raw)
    if (out.injected) this.stripInjectedUsage()
    return out.raw
  }

  /** Reads one event-stream chunk; returns what to forward to the client. */
  onSseChunk(chunk: Buffer): Buffer {
    this.streamed = true
    if (!this.stripUsage) {
      // Passed on as it came; only read here.
      this.parser.feed(this.decoder.decode(chunk, { stream: true }))
      return chunk
    }
    // Only whole events are forwarded, so a usage event split across chunks can still be removed.
    const bytes = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk])
    const out: Buffer[] = []
    let start = 0
    for (let end = eventEnd(bytes, start); end !== -1; end = eventEnd(bytes, start)) {
      out.push(this.readEvent(bytes.subarray(start, end)))
      start = end
    }
    this.pending = start === bytes.length ? NOTHING : Buffer.from(bytes.subarray(start))
    return out.length === 1 ? out[0]! : Buffer.concat(out)
  }

  /** At the end of the stream: what is still held back (a last event without its blank line). */
  flushSse(): Buffer {
    if (!this.stripUsage) {
      // A last event without its blank line is still an event an engine meant.
      this.parser.feed(`${this.decoder.decode()}\n\n`)
      return NOTHING
    }
    const rest = this.pending
    this.pending = NOTHING
    if (rest.length === 0) return rest
    const out = this.readEvent(rest)
    this.parser.feed('\n\n')
    return out
  }

  /** Reads a plain (non-stream) transcription answer as it passes, for its `usage` or `duration`; returns `src`. */
  watchBody(src: Readable): Readable {
    src.on('data', (c: Buffer) => this.onBodyChunk(c))
    src.once('end', () => this.endTranscript())
    return src
  }

  /** One chunk of a plain answer: kept while the answer is small enough to be read for its usage. */
  onBodyChunk(chunk: Buffer): void {
    this.bodySize += chunk.length
    if (this.bodySize <= BODY_PEEK_LIMIT) this.bodyParts.push(chunk)
  }

  /** The plain answer of a relayed call (chat, completions, embeddings) ended: its `usage` is counted. */
  endBody(): void {
    this.readAnswer()
  }

  /** A plain transcription answer ended: its `duration` (or its `usage`) is counted. */
  endTranscript(): void {
    const duration = this.readAnswer()?.duration
    if (typeof duration === 'number') this.addAudioSeconds(duration)
  }

  /** The plain answer parsed, its usage counted; null when it is too large or not a JSON object. */
  private readAnswer(): Answer | null {
    const parts = this.bodyParts
    this.bodyParts = []
    if (this.bodySize > BODY_PEEK_LIMIT || this.bodySize === 0) return null
    const v = parseAnswer(Buffer.concat(parts).toString('utf8'))
    if (v !== null) this.takeUsage(v.usage)
    return v
  }

  addSpeechCharacters(n: number): void {
    this.characters += n
  }

  addAudioSeconds(s: number): void {
    if (Number.isFinite(s) && s > 0) this.audio += s
  }

  result(): RequestUsage {
    const estimated = this.completion === null && this.streamed && this.textChunks > 0
    const completion = this.completion ?? (estimated ? this.textChunks : null)
    const span = this.firstTextAt !== null && this.lastTextAt !== null ? (this.lastTextAt - this.firstTextAt) / 1000 : 0
    // The first token opens the span: tokens after it over the time they took.
    const rate = completion !== null && completion > 1 && span > 0 ? (completion - 1) / span : null
    return {
      prompt_tokens: this.prompt,
      completion_tokens: completion,
      tokens_estimated: estimated,
      ttft_ms: this.firstTextAt === null ? null : round(this.firstTextAt - this.startedAt),
      tokens_per_s: rate === null ? null : round(rate),
      generation_s: span,
      audio_seconds: this.audio,
      speech_characters: this.characters,
    }
  }

  /**
   * One whole event of a stream whose usage Tandem asked for: counted, and returned as the bytes to
   * forward: none for the usage event Tandem asked for, the event without the `usage: null` member
   * the engine added to the others, or the bytes as they came.
   */
  private readEvent(raw: Buffer): Buffer {
    this.lastData = null
    const text = raw.toString('utf8')
    this.parser.feed(text)
    const data = this.lastData as string | null
    const v = data === null ? null : parseAnswer(data)
    // The event Tandem asked for: usage with no choices.
    if (v !== null && isObject(v.usage) && Array.isArray(v.choices) && v.choices.length === 0) return NOTHING
    const cut = text.replace(NULL_USAGE, '')
    return cut === text ? raw : Buffer.from(cut, 'utf8')
  }

  /** One event as eventsource-parser gives it: its text counted, its usage taken. */
  private onEvent(event: EventSourceMessage): void {
    this.lastData = event.data
    if (event.data === '[DONE]') return
    const v = parseAnswer(event.data)
    if (v === null) return
    this.takeUsage(v.usage)
    this.countText(textFields(v.choices))
  }

  /** Stamps the time of an event that carried `n` text fields (one per token an engine sends). */
  private countText(n: number): void {
    if (n === 0) return
    const t = this.now()
    this.textChunks += n
    if (this.firstTextAt === null) this.firstTextAt = t
    this.lastTextAt = t
  }

  private takeUsage(u: unknown): void {
    if (isObject(u)) this.takeCounts(u.prompt_tokens, u.completion_tokens)
  }

  /** An upstream's token counts, each taken only when it is a count (a whole number, not negative). */
  private takeCounts(prompt: unknown, completion: unknown): void {
    if (isTokenCount(prompt)) this.prompt = prompt
    if (isTokenCount(completion)) this.completion = completion
  }
}

/** The meter's clock unless a test gives one: one function for every meter, not a closure each. */
function monotonicNow(): number {
  return performance.now()
}

function isTokenCount(n: unknown): n is number {
  return Number.isSafeInteger(n) && (n as number) >= 0
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

/** A JSON object's text parsed; null for anything else. */
function parseAnswer(text: string): Answer | null {
  try {
    const v: unknown = JSON.parse(text)
    return isObject(v) ? v : null
  } catch {
    return null
  }
}

/** How many non-empty generated-text fields (content, reasoning, completion text) the choices of an event hold. */
function textFields(choices: unknown): number {
  if (!Array.isArray(choices)) return 0
  let n = 0
  for (const c of choices as unknown[]) {
    if (!isObject(c)) continue
    const delta = isObject(c.delta) ? c.delta : {}
    for (const field of [c.text, delta.content, delta.reasoning_content, delta.reasoning])
      if (typeof field === 'string' && field !== '') n++
  }
  return n
}

/**
 * Where the first event of `bytes` from `from` ends (after its blank line), or -1 when it has not
 * ended yet. Lines end in LF, CRLF or CR (WHATWG HTML, 9.2.6), so a blank line is two line ends in a row.
 */
function eventEnd(bytes: Buffer, from: number): number {
  let lineEnds = 0
  for (let i = from; i < bytes.length; i++) {
    const c = bytes[i]
    if (c === 0x0a) lineEnds++
    else if (c === 0x0d) {
      // A CR at the end of the bytes may be the first half of a CRLF: wait for the next read.
      if (i + 1 === bytes.length) return -1
      if (bytes[i + 1] === 0x0a) i++
      lineEnds++
    } else lineEnds = 0
    if (lineEnds === 2) return i + 1
  }
  return -1
}

function round(n: number): number {
  return Math.round(n * 100) / 100
}
