import type http from 'node:http'
import { memberBytes, memberNumber, membersFromEnd, scanJson } from './jsonScan'
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
/** The names of the fields that carry generated text, each with its opening quote. */
const CONTENT = '"content'
const TEXT = '"text'
const REASONING = '"reasoning_content'
/** The ends of the text fields' names with the `":"` after them: `text` ends in `xt`, the other two in `nt`. */
const TEXT_END = 'xt":"'
const CONTENT_END = 'nt":"'
const TEXT_NAMES = [TEXT]
const CONTENT_NAMES = [CONTENT, REASONING]
/** The member an OpenAI-style engine adds to every chunk once asked for usage, as it mostly writes it. */
const NULL_USAGE = ',"usage":null'
/** What follows `"usage"` in it. */
const NULL_TAIL = ':null'
/** The end of a chunk whose last member it is. */
const NULL_USAGE_END = `${NULL_USAGE}}`
/** `"usage"` without its opening quote (usageKeyAt). */
const USAGE_TAIL = 'usage"'
/** A blank line: the end of an event. */
const EVENT_END = /\r?\n\r?\n/
/** EVENT_END searched from a place (eventsIn, which runs to the end each call: nothing is left in it between calls). */
const EVENT_ENDS = new RegExp(EVENT_END, 'g')
const NOTHING = Buffer.alloc(0)

interface UpstreamUsage {
  prompt_tokens?: unknown
  completion_tokens?: unknown
}

/** What the meter reads of a plain answer: a relayed call's `usage`; a transcription's `usage` and `duration`. */
const ANSWER_MEMBERS = [Buffer.from('usage')]
const TRANSCRIPT_MEMBERS = ['usage', 'duration'].map((name) => Buffer.from(name))
const USAGE_MEMBERS = ['prompt_tokens', 'completion_tokens'].map((name) => Buffer.from(name))

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
 * the bytes to pass on: the same chunk, or, when Tandem asked for usage itself, the chunk without
 * the extra usage event), `watchBody` for a plain answer, `result()` at the end.
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
  // Bytes are read as latin1: one character per byte, so a place in the text is a place in the
  // bytes, and a multi-byte character split across chunks needs no decoder (every pattern sought is ASCII).
  /** The unfinished last event of the reads so far. */
  private pending: Buffer = NOTHING
  private bodyParts: Buffer[] = []
  private bodySize = 0

  constructor(
    /** performance.now() when the request arrived. */
    private readonly startedAt: number,
    private readonly now: () => number = monotonicNow,
  ) {}

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
    const held = this.pending
    const text = held.length === 0 ? chunk.toString('latin1') : held.toString('latin1') + chunk.toString('latin1')
    // What is forwarded is cut from the bytes that came (the held ones, then the chunk's), never
    // encoded again from the text: a stream's last read is most of the stream.
    const bytes = new TextRange(held, chunk)
    // The whole events before the first that mentions usage (mostly all of them) have their text
    // counted in one pass and pass as they came; the rest is read event by event. Only an
    // unfinished last event is held back: a read of the upstream may end inside one.
    const crlf = text.includes('\r')
    const usageAt = crlf ? 0 : usageKeyAt(text)
    // A read of the upstream mostly ends where an event does, which needs no search to see.
    const boundary = crlf
      ? -1
      : usageAt !== -1
        ? text.lastIndexOf('\n\n', usageAt)
        : endsWithBlankLine(text)
          ? text.length - 2
          : text.lastIndexOf('\n\n')
    const cut = boundary === -1 ? 0 : boundary + 2
    this.countText(cut === text.length ? text : text.slice(0, cut))
    if (usageAt === -1) {
      this.pending = bytes.copy(cut, text.length)
      if (!this.stripUsage) return chunk
      return bytes.slice(0, cut)
    }
    const events = eventsIn(text, cut)
    const last = events.pop()!
    this.pending = bytes.copy(last.start, text.length)
    if (!this.stripUsage) {
      for (const ev of events) this.readEvent(text.slice(ev.start, ev.end))
      return chunk
    }
    // Only whole events are forwarded, so a usage event split across chunks can still be removed.
    const out = [bytes.slice(0, cut)]
    for (const ev of events) {
      const original = text.slice(ev.start, ev.end)
      const keep = this.readEvent(original)
      if (keep === original) out.push(bytes.slice(ev.start, ev.next))
      else if (typeof keep === 'number')
        out.push(bytes.slice(ev.start, ev.start + keep), bytes.slice(ev.start + keep + NULL_USAGE.length, ev.next))
      else if (keep !== null) out.push(Buffer.from(keep, 'latin1'), bytes.slice(ev.end, ev.next))
    }
    return out.length === 1 ? out[0]! : Buffer.concat(out)
  }

  /** At the end of the stream: what is still held back (a last event without its blank line). */
  flushSse(): Buffer {
    const rest = this.pending
    this.pending = NOTHING
    if (rest.length === 0) return rest
    const text = rest.toString('latin1')
    const keep = this.readEvent(text)
    if (!this.stripUsage) return NOTHING
    if (typeof keep === 'number')
      return Buffer.concat([rest.subarray(0, keep), rest.subarray(keep + NULL_USAGE.length)])
    return keep === text ? rest : Buffer.from(keep ?? '', 'latin1')
  }

  /** Reads a plain (non-stream) transcription answer as it passes, for its `usage` or `duration`; returns `src`. */
  watchBody(src: http.IncomingMessage): http.IncomingMessage {
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
    this.readAnswer(ANSWER_MEMBERS)
  }

  /** A plain transcription answer ended: its `duration` (or its `usage`) is counted. */
  endTranscript(): void {
    this.readAnswer(TRANSCRIPT_MEMBERS)
  }

  private readAnswer(members: readonly Uint8Array[]): void {
    const parts = this.bodyParts
    this.bodyParts = []
    if (this.bodySize > BODY_PEEK_LIMIT || this.bodySize === 0) return
    const whole = parts.length === 1 ? parts[0]! : Buffer.concat(parts)
    // Read from the end, nothing built: `usage` comes last or nearly, so the answer's length does
    // not count (docs/gateway-profile.md, eighth pass). A body that is not a JSON object (text or
    // srt transcripts, audio) counts nothing; what is read is checked on its own.
    const found = membersFromEnd(whole, members, 0, USAGE_MEMBERS)
    if (found === null) return
    // The counts come from inside `usage` (none when it is not an object), found in the same walk
    // back; each is then checked as a count.
    this.takeCounts(memberNumber(whole, found.inner, 0), memberNumber(whole, found.inner, 1))
    if (members !== TRANSCRIPT_MEMBERS) return
    const durationBytes = memberBytes(whole, found, 1)
    // Checked as JSON on its own; a number read as scanJson's callers read one (the whole text its span).
    if (durationBytes === null || scanJson(durationBytes, 0, []).error !== null) return
    const duration = memberNumber(durationBytes, { spans: [0, durationBytes.length] }, 0)
    if (duration !== null && Number.isFinite(duration) && duration > 0) this.audio += duration
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
   * One event: counts text and usage; returns the event to forward, null to drop it, or the index in
   * it of a `,"usage":null` to cut out (OpenAI-style engines add one to every chunk once asked).
   */
  private readEvent(ev: string): string | number | null {
    const from = ev.startsWith('data: ') ? 6 : ev.startsWith('data:') ? 5 : -1
    const data = from === -1 ? dataOf(ev) : ev.slice(from)
    if (data === null || data === '[DONE]') return ev
    this.countText(data)
    const key = usageKeyAt(data)
    if (key === -1) return ev
    // The `usage: null` an engine adds to every chunk once asked, as its last member and the only
    // usage: nothing to count, so the chunk is not parsed (JSON.parse was most of a chunk's cost).
    if (from !== -1 && key === data.length - NULL_USAGE.length && data.endsWith(NULL_USAGE_END))
      return this.stripUsage ? from + key - 1 : ev
    let v: { usage?: UpstreamUsage | null; choices?: unknown }
    try {
      v = JSON.parse(data) as typeof v
    } catch {
      return ev
    }
    if (v.usage) this.takeUsage(v.usage)
    if (!this.stripUsage) return ev
    // The event Tandem asked for: usage with no choices. Other events lose only the `usage: null` it added.
    if (v.usage && Array.isArray(v.choices) && v.choices.length === 0) return null
    // Mostly written without spaces: then it is cut from the bytes as they came, not replaced in a new string.
    if (from !== -1 && key > 0 && data.charCodeAt(key - 1) === 0x2c && data.startsWith(NULL_TAIL, key + 7))
      return from + key - 1
    return ev.replace(/,\s*"usage":\s*null/, '')
  }

  /** Counts the text-carrying fields in `text` (one per chunk an engine sends) and stamps their time. */
  private countText(text: string): void {
    const n = textFields(text)
    if (n === 0) return
    const t = this.now()
    this.textChunks += n
    if (this.firstTextAt === null) this.firstTextAt = t
    this.lastTextAt = t
  }

  private takeUsage(u: UpstreamUsage | null | undefined): void {
    if (u && typeof u === 'object') this.takeCounts(u.prompt_tokens, u.completion_tokens)
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

/** One event in a text: `[start, end)`, and `next` where the one after it starts (after the blank line). */
interface EventSpan {
  readonly start: number
  readonly end: number
  readonly next: number
}

/**
 * The events of `text` from `from` on; the last one is the unfinished rest (its `end` and `next`
 * are the text's end). `\n\n` ends an event as engines send them; `\r\n\r\n` is accepted too.
 */
function eventsIn(text: string, from: number): EventSpan[] {
  const out: EventSpan[] = []
  const blank = EVENT_ENDS
  blank.lastIndex = from
  let start = from
  for (let m = blank.exec(text); m !== null; m = blank.exec(text)) {
    out.push({ start, end: m.index, next: blank.lastIndex })
    start = blank.lastIndex
  }
  out.push({ start, end: text.length, next: text.length })
  return out
}

/** The bytes behind a text read as latin1 from `held` then `chunk`: a range of the text is the same range of them. */
class TextRange {
  constructor(
    private readonly held: Buffer,
    private readonly chunk: Buffer,
  ) {}

  /** The bytes `[a, b)`, sharing the chunk's memory where they lie in it. */
  slice(a: number, b: number): Buffer {
    const h = this.held.length
    if (a >= h) return this.chunk.subarray(a - h, b - h)
    if (b <= h) return this.held.subarray(a, b)
    return Buffer.concat([this.held.subarray(a), this.chunk.subarray(0, b - h)])
  }

  /** The bytes `[a, b)` in memory of their own, to keep past this read. */
  copy(a: number, b: number): Buffer {
    return a === b ? NOTHING : Buffer.from(this.slice(a, b))
  }
}

/**
 * Where `"usage"` first is in `text`, or -1. Sought as `usage"` and checked for its opening quote:
 * V8 searches a pattern of seven characters or more with a Boyer-Moore-Horspool table built for
 * each search, which costs about twice a linear search over a chunk's 150 characters.
 */
function usageKeyAt(text: string): number {
  for (let at = text.indexOf(USAGE_TAIL); at !== -1; at = text.indexOf(USAGE_TAIL, at + 1))
    if (at > 0 && text.charCodeAt(at - 1) === 0x22) return at - 1
  return -1
}

function endsWithBlankLine(text: string): boolean {
  const n = text.length
  return n >= 2 && text.charCodeAt(n - 1) === 0x0a && text.charCodeAt(n - 2) === 0x0a
}

/** How many non-empty content, text or reasoning fields `text` holds: chunks that carry generated text. */
function textFields(text: string): number {
  return namedFields(text, TEXT_END, TEXT_NAMES) + namedFields(text, CONTENT_END, CONTENT_NAMES)
}

/**
 * How many fields named one of `names` (each with its opening quote) with a non-empty string value
 * `text` holds, found by `end`: their names' last two letters and `":"`. A rare first letter lets
 * each search skip most of a chunk; the `t":"` all three names share also stopped at every
 * `"object":"` (a stream's events read in one go cost one search per match, about 500 instructions).
 */
function namedFields(text: string, end: string, names: readonly string[]): number {
  let n = 0
  for (let at = text.indexOf(end); at !== -1; at = text.indexOf(end, at + end.length)) {
    if (text.charCodeAt(at + end.length) === 0x22) continue
    for (const name of names) if (text.startsWith(name, at + 2 - name.length)) n++
  }
  return n
}

/** The joined `data:` lines of an event with other fields (event:, id:), or null when it has none. */
function dataOf(ev: string): string | null {
  const lines = ev.split(/\r?\n/).filter((l) => l.startsWith('data:'))
  if (lines.length === 0) return null
  return lines.map((l) => l.slice(l.startsWith('data: ') ? 6 : 5)).join('\n')
}

function round(n: number): number {
  return Math.round(n * 100) / 100
}
