import type { ServerResponse } from 'node:http'
import type { Readable } from 'node:stream'
import { createParser, type EventSourceMessage, type EventSourceParser } from 'eventsource-parser'
import type { RelayRequest } from './wire'

/**
 * What one gateway request used (issue 16): tokens from the upstream's `usage`, time to first
 * token and tokens per second on streamed answers, audio seconds transcribed or synthesized and
 * characters synthesized. When a stream's upstream sends no usage, completion tokens are counted from the
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
  /** A transcription's input audio, or the speech's output audio (what the tts answered). */
  readonly audio_seconds: number
  readonly speech_characters: number
  /** The model the request named (a string `model`, a tts voice); null when it named none. */
  readonly model: string | null
}

/** A non-streamed answer body is read for `usage`/`duration` up to this size; larger ones are not parsed. */
const BODY_PEEK_LIMIT = 4 * 1024 * 1024
const NOTHING = Buffer.alloc(0)
/**
 * The `usage` member of a stream's event with the comma before it: `null` (an engine asked for usage
 * adds it to every event) or the running counts an engine started with vLLM's
 * `--enable-force-include-usage` adds (an object, with at most one nested object such as
 * `prompt_tokens_details`). The braces of a nested object are disjoint from its other characters, so
 * the match is linear.
 */
const CHUNK_USAGE = /,\s*"usage"\s*:\s*(?:null|\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\})(?=\s*[,}])/g

/** What the meter reads of an event's or an answer's JSON; anything else in it is ignored. */
interface Answer {
  usage?: unknown
  choices?: unknown
  duration?: unknown
}

/** Whether a stream's client asked for usage itself (`stream_options.include_usage: true`). */
export function asksStreamUsage(request: RelayRequest): boolean {
  const opts = request.streamOptions
  return isObject(opts) && opts.include_usage === true
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
  /** The upload's own length, counted when the transcription answer says none. */
  private uploadSeconds = 0
  private characters = 0
  private model: string | null = null
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

  /** The client did not ask for the usage the engine sends anyway (forced): it is taken out of what the client receives. */
  stripUnaskedUsage(): void {
    this.stripUsage = true
  }

  /**
   * What the client asked, read before the request goes upstream untouched: a stream whose client
   * did not ask for usage is counted from the usage an engine started by Tandem always sends, and
   * that usage is kept from the client.
   */
  readRequest(request: RelayRequest): void {
    this.model = request.model
    if (request.stream && !asksStreamUsage(request)) this.stripUnaskedUsage()
  }

  /** The model a request that is not relayed as JSON named (speech's voice, a transcription's model). */
  nameModel(model: string | null): void {
    this.model = model
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

  /**
   * The length of the audio a transcription relays, from the upload itself (a WAV's header): what
   * is counted when the answer says none (`json` and `text` answers carry no duration).
   */
  uploadAudioSeconds(s: number): void {
    this.uploadSeconds = s
  }

  /** A plain transcription answer ended: its `duration`, else OpenAI's `usage.seconds`, else the upload's length. */
  endTranscript(): void {
    const answer = this.readAnswer()
    const usage = answer?.usage
    const seconds = isObject(usage) && usage.type === 'duration' ? usage.seconds : undefined
    if (typeof answer?.duration === 'number') this.addAudioSeconds(answer.duration)
    else if (typeof seconds === 'number') this.addAudioSeconds(seconds)
    else this.addAudioSeconds(this.uploadSeconds)
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
      model: this.model,
    }
  }

  /**
   * One whole event of a stream whose client did not ask for usage: counted, and returned as the
   * bytes to forward: none for the usage event, the event without the `usage` member the engine
   * added to the others, or the bytes as they came.
   */
  private readEvent(raw: Buffer): Buffer {
    this.lastData = null
    const text = raw.toString('utf8')
    this.parser.feed(text)
    const data = this.lastData as string | null
    const v = data === null ? null : parseAnswer(data)
    // The usage event: usage with no choices.
    if (v !== null && isObject(v.usage) && Array.isArray(v.choices) && v.choices.length === 0) return NOTHING
    const cut = withoutUsage(text)
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

/**
 * An event's text without its own `usage` member: the last one matched, since an engine writes it
 * after `choices` (one nested in a choice comes before it). The text as it was when there is none.
 */
function withoutUsage(text: string): string {
  if (!text.includes('"usage"')) return text
  let last: RegExpExecArray | null = null
  CHUNK_USAGE.lastIndex = 0
  for (let m = CHUNK_USAGE.exec(text); m !== null; m = CHUNK_USAGE.exec(text)) last = m
  return last === null ? text : text.slice(0, last.index) + text.slice(last.index + last[0].length)
}

function round(n: number): number {
  return Math.round(n * 100) / 100
}

/** Each gateway request's meter, kept by the gateway: the edge's request state knows no usage. */
const meters = new WeakMap<ServerResponse, UsageMeter>()

/** The request's usage meter (set by the request log when usage accounting is on). */
export function usageMeterOf(res: ServerResponse): UsageMeter | undefined {
  return meters.get(res)
}

export function attachUsageMeter(res: ServerResponse, meter: UsageMeter): void {
  meters.set(res, meter)
}
