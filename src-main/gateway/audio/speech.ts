import type http from 'node:http'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { z } from 'zod'
import { ApiError, describeZodError } from '../../contract/errors'
import { SPEECH_FORMATS, SpeechRequest } from '../../contract/relays'
import type { HttpAnswer } from '../../lib/httpClient'
import { probeWording, type ProbeStart } from '../../services/types'
import { encodeMultipart } from './multipart'
import { parseWavHead, type WavLayout } from './wavChunks'
import type { Upstream } from '../relay/upstreams'
import { callUpstream, pipeResponse, readText, upstreamDetail, UpstreamUnreachable } from '../relay/wire'

/** Voice ids are dot-separated with a middle locale segment: `<family>.<LOCALE>.<Name>[.<Style>]` (spec 1, 4.9 rule 1). */
export const VOICE_FORM = '<family>.<LOCALE>.<Name>, e.g. Multivoice.EN-US.Aria'

const VOICE_ID = /^[A-Za-z0-9_-]{1,64}(\.[A-Za-z0-9_-]{1,64}){2,3}$/

/** `Multivoice.EN-US.Aria` → `en-US`; null when the id has no locale segment. */
export function voiceLanguage(voice: string): string | null {
  if (!VOICE_ID.test(voice)) return null
  const loc = voice.split('.')[1]!
  const m = /^([A-Za-z]{2,3})[-_]([A-Za-z]{2}|\d{3})$/.exec(loc)
  if (!m) return null
  return `${m[1]!.toLowerCase()}-${m[2]!.toUpperCase()}`
}

type SpeechFormat = (typeof SPEECH_FORMATS)[number]

/** A speech request whose voice is a tts voice id, with the language the tts needs. */
export type ResolvedSpeech = SpeechRequest & { language: string }

export function parseSpeech(body: Record<string, unknown>): SpeechRequest {
  const format = body.response_format
  if (typeof format === 'string' && !(SPEECH_FORMATS as readonly string[]).includes(format))
    throw new ApiError(
      'bad_input',
      `response_format ${JSON.stringify(format.slice(0, 40))} is not supported: use "wav" (the default) or "pcm" (the same samples without the WAV header)`,
      { param: 'response_format' },
    )
  const parsed = SpeechRequest.safeParse(body)
  if (!parsed.success) {
    const first = parsed.error.issues[0]
    const param = first && first.path.length > 0 ? first.path.join('.') : undefined
    throw new ApiError('bad_input', describeZodError(parsed.error), param === undefined ? {} : { param })
  }
  return parsed.data
}

/** OpenAI's built-in voice names, in the order their defaults are handed out. */
export const OPENAI_VOICES = [
  'alloy',
  'echo',
  'fable',
  'onyx',
  'nova',
  'shimmer',
  'ash',
  'ballad',
  'coral',
  'sage',
  'verse',
] as const

/** One `name=voice` entry of TTS_VOICE_ALIASES. */
const AliasEntry = z.object({
  alias: z.string().regex(/^[a-z][a-z0-9_-]{0,31}$/, 'an alias is a name without dots, e.g. alloy'),
  voice: z.string().refine((v) => voiceLanguage(v) !== null, `the voice must be a voice id: ${VOICE_FORM}`),
})

/**
 * TTS_VOICE_ALIASES (`alloy=Multivoice.EN-US.Aria,echo=…`): each entry is checked on its own; a
 * malformed one is reported and skipped, the rest still apply.
 */
export function parseVoiceAliases(raw: string): { aliases: Map<string, string>; problems: string[] } {
  const aliases = new Map<string, string>()
  const problems: string[] = []
  for (const part of raw.split(',')) {
    const entry = part.trim()
    if (entry === '') continue
    const eq = entry.indexOf('=')
    const parsed = AliasEntry.safeParse({
      alias: eq === -1 ? entry : entry.slice(0, eq).trim().toLowerCase(),
      voice: eq === -1 ? '' : entry.slice(eq + 1).trim(),
    })
    if (!parsed.success) problems.push(`${JSON.stringify(entry.slice(0, 80))}: ${describeZodError(parsed.error)}`)
    else if (aliases.has(parsed.data.alias)) problems.push(`${parsed.data.alias} is given twice; the first is used`)
    else aliases.set(parsed.data.alias, parsed.data.voice)
  }
  return { aliases, problems }
}

/**
 * The voice each OpenAI name stands for when TTS_VOICE_ALIASES does not say: the tts's voices
 * ordered English first (plain en-US, plain other English, then styled English), then the rest
 * (plain before styled), then by id, handed out in OPENAI_VOICES order (round again if there
 * are fewer voices than names).
 */
export function defaultAliases(voices: readonly string[]): Map<string, string> {
  const weight = (v: string): number => {
    const lang = voiceLanguage(v)!
    const styled = v.split('.').length > 3 ? 1 : 0
    if (!lang.startsWith('en-')) return 4 + styled
    return 2 * styled + (lang === 'en-US' ? 0 : 1)
  }
  const order = voices
    .filter((v) => voiceLanguage(v) !== null)
    .sort((a, b) => weight(a) - weight(b) || (a < b ? -1 : a > b ? 1 : 0))
  const out = new Map<string, string>()
  if (order.length > 0) OPENAI_VOICES.forEach((name, i) => out.set(name, order[i % order.length]!))
  return out
}

export interface VoiceAlias {
  alias: string
  voice: string
  source: 'setting' | 'default'
}

/** Resolves OpenAI voice names (and other configured aliases) to tts voice ids. */
export class VoiceAliases {
  constructor(
    private readonly configured: ReadonlyMap<string, string>,
    /** The tts's voice ids (cached by the caller). */
    private readonly voices: () => Promise<string[]>,
  ) {}

  /** From the TTS_VOICE_ALIASES setting; each malformed entry is reported through `warn` and skipped. */
  static fromSetting(raw: string, voices: () => Promise<string[]>, warn: (message: string) => void): VoiceAliases {
    const { aliases, problems } = parseVoiceAliases(raw)
    for (const p of problems) warn(`TTS_VOICE_ALIASES: ${p}; entry skipped`)
    return new VoiceAliases(aliases, voices)
  }

  /** Every alias and the voice it stands for: the configured ones, then the defaults the voice list allows. */
  async table(): Promise<VoiceAlias[]> {
    const out: VoiceAlias[] = [...this.configured].map(([alias, voice]) => ({ alias, voice, source: 'setting' }))
    let defaults = new Map<string, string>()
    try {
      defaults = defaultAliases(await this.voices())
    } catch {
      // The tts is down: only the configured aliases are known.
    }
    for (const [alias, voice] of defaults)
      if (!this.configured.has(alias)) out.push({ alias, voice, source: 'default' })
    return out
  }

  /** The request with its voice as a tts voice id and the language that voice speaks. */
  async resolve(speech: SpeechRequest): Promise<ResolvedSpeech> {
    const voice = VOICE_ID.test(speech.voice) ? speech.voice : await this.voiceFor(speech.voice)
    const language = voiceLanguage(voice)
    if (language === null)
      throw new ApiError(
        'bad_input',
        `voice ${JSON.stringify(voice)} has no locale segment; expected ${VOICE_FORM} or one of ${OPENAI_VOICES.join(', ')}`,
        { param: 'voice' },
      )
    return { ...speech, voice, language }
  }

  private async voiceFor(name: string): Promise<string> {
    const alias = name.toLowerCase()
    const configured = this.configured.get(alias)
    if (configured !== undefined) return configured
    if (!(OPENAI_VOICES as readonly string[]).includes(alias)) return name
    let voices: string[]
    try {
      voices = await this.voices()
    } catch (err) {
      if (err instanceof ApiError) throw err
      throw new ApiError('upstream_unreachable', `tts voice list unavailable for ${alias}: ${(err as Error).message}`)
    }
    const voice = defaultAliases(voices).get(alias)
    if (voice === undefined)
      throw new ApiError('upstream_error', `the tts lists no voice to stand in for ${alias}; set TTS_VOICE_ALIASES`)
    return voice
  }
}

/** Calls the tts service's multipart synthesize; resolves with the WAV response stream. */
export async function synthesize(
  tts: Upstream,
  speech: { input: string; voice: string; language: string; speed?: number },
  signal: AbortSignal,
  onWedged: (detail: string) => ProbeStart,
): Promise<HttpAnswer> {
  const fields: [string, string][] = [
    ['text', speech.input],
    ['language', speech.language],
    ['voice', speech.voice],
  ]
  if (speech.speed !== undefined) fields.push(['speed', String(speech.speed)])
  const form = encodeMultipart(fields)
  let res: HttpAnswer
  try {
    res = await callUpstream(tts, {
      method: 'POST',
      path: '/v1/audio/synthesize',
      headers: { 'content-type': form.contentType, 'content-length': form.length, accept: 'audio/wav' },
      body: form.body,
      signal,
    })
  } catch (err) {
    if (err instanceof UpstreamUnreachable) throw new ApiError('upstream_unreachable', err.message)
    throw err
  }
  const status = res.status
  if (status === 200) return res
  const detail = upstreamDetail(await readText(res).catch(() => ''))
  if (status >= 500) {
    const probe = onWedged(`tts answered HTTP ${status}: ${detail}`)
    throw new ApiError(
      'unavailable',
      `tts failed (HTTP ${status}: ${detail}); ${probeWording('tts', probe)}, retry in 60 s`,
      {
        headers: { 'Retry-After': '60' },
      },
    )
  }
  throw new ApiError(status === 404 ? 'not_found' : 'bad_input', `tts refused the request: ${detail}`, {
    status: status === 404 ? 404 : 400,
  })
}

/** The sample format a WAV's `fmt ` chunk declares. */
export interface SampleFormat {
  sampleRate: number
  channels: number
  bitsPerSample: number
}

/** More header than this before the samples is not a WAV the gateway relays. */
const WAV_HEADER_MAX = 1024 * 1024
/** A `data` size a streaming encoder writes when it does not know the length yet. */
const UNKNOWN_SIZE = new Set([0, 0xffffffff])

function notWav(why: string): ApiError {
  return new ApiError('upstream_error', `the tts answer is not a WAV the gateway can read: ${why}`)
}

/**
 * Reads a WAV stream's RIFF chunks up to `data` (any chunks before it, `LIST`, `fact` and the
 * like, are skipped with their pad byte; the header is not assumed to be 44 bytes) and gives the
 * sample format and the samples, stopping at the end of the `data` chunk.
 */
export async function wavSamples(
  src: AsyncIterable<Buffer>,
): Promise<{ format: SampleFormat | null; samples: AsyncIterable<Buffer> }> {
  const it = src[Symbol.asyncIterator]()
  let buf = Buffer.alloc(0)
  const need = async (n: number): Promise<void> => {
    if (n > WAV_HEADER_MAX) throw notWav(`no data chunk in the first ${WAV_HEADER_MAX} bytes`)
    while (buf.length < n) {
      const next = await it.next()
      if (next.done) throw notWav('it ends inside its header')
      buf = Buffer.concat([buf, next.value])
    }
  }
  await need(12)
  if (buf.toString('latin1', 0, 4) !== 'RIFF' || buf.toString('latin1', 8, 12) !== 'WAVE')
    throw notWav('no RIFF/WAVE header')
  let format: SampleFormat | null = null
  for (let at = 12; ;) {
    await need(at + 8)
    const id = buf.toString('latin1', at, at + 4)
    const size = buf.readUInt32LE(at + 4)
    at += 8
    if (id === 'data') {
      const rest = buf.subarray(at)
      return { format, samples: dataChunk(rest, it, UNKNOWN_SIZE.has(size) ? Infinity : size) }
    }
    if (id === 'fmt ') {
      await need(at + 16)
      format = {
        channels: buf.readUInt16LE(at + 2),
        sampleRate: buf.readUInt32LE(at + 4),
        bitsPerSample: buf.readUInt16LE(at + 14),
      }
    }
    at += size + (size % 2)
  }
}

async function* dataChunk(first: Buffer, it: AsyncIterator<Buffer>, size: number): AsyncGenerator<Buffer> {
  let left = size
  let chunk: Buffer | null = first
  while (left > 0) {
    if (chunk === null) {
      const next = await it.next()
      if (next.done) return
      chunk = next.value
    }
    const part = chunk.length > left ? chunk.subarray(0, left) : chunk
    left -= part.length
    if (part.length > 0) yield part
    chunk = null
  }
  await it.return?.()
}

/**
 * Seconds of speech in a WAV as it passes in chunks (issue 45, audio minutes): the header's byte
 * rate, and the bytes of its `data` chunk that went by, so a stream the client left counts what it
 * got. Anything that is not a WAV with its header in the first 64 KiB counts nothing.
 */
export class WavSeconds {
  private head: Buffer | null = Buffer.alloc(0)
  private layout: WavLayout | null = null
  private counted = 0

  constructor(private readonly onSeconds: (s: number) => void) {}

  feed(chunk: Buffer): void {
    let data = chunk
    if (this.layout === null) {
      if (this.head === null) return
      const head = Buffer.concat([this.head, chunk])
      const layout = parseWavHead(head, Infinity)
      if (layout === null) {
        this.head = head.length >= 64 * 1024 || !isRiffStart(head) ? null : head
        return
      }
      this.layout = layout
      this.head = null
      data = head.subarray(layout.dataOffset)
    }
    const n = Math.min(data.length, this.layout.dataBytes - this.counted)
    if (n <= 0) return
    this.counted += n
    this.onSeconds(n / this.layout.byteRate)
  }
}

/** Whether `head` can still be the start of a RIFF/WAVE file. */
function isRiffStart(head: Buffer): boolean {
  const want = Buffer.from('RIFF')
  const n = Math.min(4, head.length)
  return head.subarray(0, n).equals(want.subarray(0, n))
}

/** The chunks of `src`, each shown to `see` as it passes. */
async function* watched(src: AsyncIterable<Buffer>, see: (chunk: Buffer) => void): AsyncGenerator<Buffer> {
  for await (const chunk of src) {
    see(chunk)
    yield chunk
  }
}

/**
 * Answers `/v1/audio/speech` from the tts's WAV: as it is, or (`pcm`) its samples without the
 * header; `usage` is given the seconds of speech as they pass.
 */
export async function answerSpeech(
  res: http.ServerResponse,
  wav: HttpAnswer,
  format: SpeechFormat,
  usage?: { addAudioSeconds(s: number): void },
): Promise<void> {
  const seconds = new WavSeconds((s) => usage?.addAudioSeconds(s))
  if (format === 'wav') {
    const length = wav.headers['content-length']
    res.writeHead(200, {
      'content-type': 'audio/wav',
      ...(typeof length === 'string' ? { 'content-length': length } : {}),
    })
    wav.body.on('data', (c: Buffer) => seconds.feed(c))
    await pipeResponse(wav.body, res)
    return
  }
  const { format: sample, samples } = await wavSamples(watched(wav.body, (c) => seconds.feed(c)))
  res.writeHead(200, {
    'content-type': 'audio/pcm',
    // Raw samples say nothing about themselves: the WAV header's facts, for the client.
    ...(sample
      ? {
          'x-sample-rate': String(sample.sampleRate),
          'x-channels': String(sample.channels),
          'x-bits-per-sample': String(sample.bitsPerSample),
        }
      : {}),
  })
  await pipeline(Readable.from(samples), res)
}
