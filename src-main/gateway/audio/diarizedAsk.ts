import { z } from 'zod'
import { ApiError } from '../../contract/errors'
import { parseWavHead } from './wavChunks'

/**
 * What a `/v1/audio/transcriptions` form asks of the diarized pipeline (issue 43), read the way the
 * official clients send it (openai 6.29.0: arrays as `name[]` fields, objects as `name[key]` fields;
 * see test/fixtures/openai-diarized/README.md). Every refusal is a 400 naming the field, before
 * anything goes upstream.
 */

export type DiarizedFormat = 'diarized_json' | 'json' | 'text' | 'srt' | 'vtt'
const FORMATS: readonly string[] = ['diarized_json', 'json', 'text', 'srt', 'vtt']

/** OpenAI's limits on known voices: up to 4 speakers, each reference 2–10 s. */
export const MAX_KNOWN_SPEAKERS = 4
export const REFERENCE_MIN_S = 2
export const REFERENCE_MAX_S = 10
/** A reference's data URL: 10 s of 48 kHz stereo 16-bit WAV is 1.9 MB, 2.6 MB as base64. */
export const REFERENCE_MAX_CHARS = 3 * 1024 * 1024

export interface ReferenceClip {
  readonly name: string
  readonly bytes: Buffer
  readonly mime: string
  /** Seconds read from the clip's own header (WAV, FLAC), or null when only the asr's decoder can tell. */
  readonly seconds: number | null
  /** The field to name in a refusal, e.g. `known_speaker_references[1]`. */
  readonly param: string
}

export interface DiarizedAsk {
  readonly format: DiarizedFormat
  readonly stream: boolean
  readonly language?: string
  readonly references: readonly ReferenceClip[]
}

const bad = (param: string, message: string): ApiError => new ApiError('bad_input', message, { param })

/** Values of a list field, sent as `name[]` (the clients) or `name` (curl -F). */
function listField(entries: readonly (readonly [string, string])[], name: string): string[] {
  return entries.filter(([k]) => k === name || k === `${name}[]`).map(([, v]) => v)
}

function lastField(entries: readonly (readonly [string, string])[], name: string): string | undefined {
  return entries.findLast(([k]) => k === name)?.[1]
}

/**
 * The diarized request a form makes, or null when the form is for the asr as it stands (relayed):
 * `diarized_json`, known voices, or a `…diarize` model (OpenAI's `gpt-4o-transcribe-diarize`), with
 * a format the pipeline answers.
 */
export function readDiarizedAsk(entries: readonly (readonly [string, string])[]): DiarizedAsk | null {
  const format = lastField(entries, 'response_format') ?? 'json'
  const names = listField(entries, 'known_speaker_names')
  const refs = listField(entries, 'known_speaker_references')
  const model = lastField(entries, 'model') ?? ''
  const wanted = format === 'diarized_json' || names.length > 0 || refs.length > 0 || /diariz/i.test(model)
  if (!wanted || !FORMATS.includes(format)) return null
  checkChunking(entries)
  const language = lastField(entries, 'language')
  if (language !== undefined && !/^[a-z]{2,3}(-[A-Za-z]{2,4})?$/.test(language))
    throw bad('language', `language '${language.slice(0, 20)}' is not an ISO-639-1 code such as 'en'`)
  return {
    format: format as DiarizedFormat,
    stream: readStream(lastField(entries, 'stream')),
    language,
    references: readReferences(names, refs),
  }
}

function readStream(v: string | undefined): boolean {
  if (v === undefined || v === '' || v === 'false' || v === '0') return false
  if (v === 'true' || v === '1') return true
  throw bad('stream', `stream must be true or false, not '${v.slice(0, 20)}'`)
}

const VadConfig = z.strictObject({
  type: z.literal('server_vad'),
  prefix_padding_ms: z.coerce.number().int().min(0).max(60_000).optional(),
  silence_duration_ms: z.coerce.number().int().min(0).max(60_000).optional(),
  threshold: z.coerce.number().min(0).max(1).optional(),
})

/**
 * `chunking_strategy`: `auto`, or a server VAD config (as `chunking_strategy[type]`… fields, or as
 * JSON text). Accepted and checked; Tandem's chunks are its own grid (wavChunks.ts), so the VAD
 * values change nothing.
 */
export function checkChunking(entries: readonly (readonly [string, string])[]): void {
  const plain = lastField(entries, 'chunking_strategy')
  const keyed = entries.filter(([k]) => k.startsWith('chunking_strategy['))
  if (plain === undefined && keyed.length === 0) return
  let value: unknown = plain
  if (keyed.length > 0) value = Object.fromEntries(keyed.map(([k, v]) => [k.slice('chunking_strategy['.length, -1), v]))
  else if (plain !== 'auto') {
    try {
      value = JSON.parse(plain!)
    } catch {
      throw bad(
        'chunking_strategy',
        `chunking_strategy must be 'auto' or a server_vad object, not '${plain!.slice(0, 40)}'`,
      )
    }
  }
  if (value === 'auto') return
  const parsed = VadConfig.safeParse(value)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const where = issue && issue.path.length > 0 ? `chunking_strategy.${issue.path.join('.')}` : 'chunking_strategy'
    throw bad(
      'chunking_strategy',
      `${where}: must be 'auto' or {type: 'server_vad', prefix_padding_ms?, silence_duration_ms?, threshold?} (${issue?.message ?? 'invalid'})`,
    )
  }
}

function readReferences(names: readonly string[], refs: readonly string[]): ReferenceClip[] {
  if (names.length > MAX_KNOWN_SPEAKERS)
    throw bad('known_speaker_names', `at most ${MAX_KNOWN_SPEAKERS} known speakers, got ${names.length}`)
  if (refs.length > MAX_KNOWN_SPEAKERS)
    throw bad('known_speaker_references', `at most ${MAX_KNOWN_SPEAKERS} known speaker references, got ${refs.length}`)
  if (names.length !== refs.length)
    throw bad(
      names.length < refs.length ? 'known_speaker_names' : 'known_speaker_references',
      `known_speaker_names has ${names.length} entries and known_speaker_references ${refs.length}: one reference per name`,
    )
  const seen = new Set<string>()
  return names.map((raw, i) => {
    const name = raw.trim()
    if (name === '' || name.length > 64)
      throw bad(`known_speaker_names[${i}]`, `known_speaker_names[${i}] must be 1–64 characters`)
    if (seen.has(name)) throw bad(`known_speaker_names[${i}]`, `known_speaker_names[${i}] repeats '${name}'`)
    seen.add(name)
    return readClip(name, refs[i]!, `known_speaker_references[${i}]`)
  })
}

const DATA_URL = /^data:([\w.+-]+\/[\w.+-]+)?((?:;[\w.+-]+=[^;,]*)*);base64,([A-Za-z0-9+/\s]*={0,2})$/

/** A reference clip from its data URL: decoded, recognised as audio, its length checked where the header tells it. */
export function readClip(name: string, url: string, param: string): ReferenceClip {
  if (url.length > REFERENCE_MAX_CHARS) throw bad(param, `${param} is longer than ${REFERENCE_MAX_CHARS} characters`)
  const m = DATA_URL.exec(url.trim())
  if (!m) throw bad(param, `${param} is not a base64 data URL (data:audio/wav;base64,…)`)
  const mime = (m[1] ?? 'application/octet-stream').toLowerCase()
  const bytes = Buffer.from(m[3]!.replace(/\s/g, ''), 'base64')
  const kind = audioKind(bytes)
  if (
    kind === null ||
    !(mime.startsWith('audio/') || mime === 'application/octet-stream' || mime === 'video/webm' || mime === 'video/mp4')
  )
    throw bad(param, `${param} is not audio (${mime}): send wav, flac, mp3, ogg, m4a or webm`)
  const seconds = clipSeconds(kind, bytes)
  if (Number.isNaN(seconds)) throw bad(param, `${param} is a WAV without readable fmt and data chunks`)
  if (seconds !== null) checkClipLength(seconds, param)
  return { name, bytes, mime, seconds, param }
}

export function checkClipLength(seconds: number, param: string): void {
  if (seconds < REFERENCE_MIN_S || seconds > REFERENCE_MAX_S)
    throw bad(
      param,
      `${param} is ${seconds.toFixed(1)} s long: a reference must be ${REFERENCE_MIN_S}–${REFERENCE_MAX_S} s of one voice`,
    )
}

type AudioKind = 'wav' | 'flac' | 'ogg' | 'mp3' | 'mp4' | 'webm'

/** The container a clip's first bytes announce, or null when they are not audio. */
export function audioKind(b: Buffer): AudioKind | null {
  if (b.length < 12) return null
  const at = (s: string, o = 0): boolean => b.toString('latin1', o, o + s.length) === s
  if (at('RIFF') && at('WAVE', 8)) return 'wav'
  if (at('fLaC')) return 'flac'
  if (at('OggS')) return 'ogg'
  if (at('ID3') || (b[0] === 0xff && (b[1]! & 0xe0) === 0xe0)) return 'mp3'
  if (at('ftyp', 4)) return 'mp4'
  if (b.readUInt32BE(0) === 0x1a45dfa3) return 'webm'
  return null
}

/** A clip's length from its own header (WAV data size, FLAC STREAMINFO); null for the others. */
function clipSeconds(kind: AudioKind, b: Buffer): number | null {
  if (kind === 'wav') {
    return parseWavHead(b, b.length)?.seconds ?? NaN
  }
  if (kind === 'flac' && b.length >= 42 && (b[4]! & 0x7f) === 0) {
    // STREAMINFO: 20-bit sample rate, then 36-bit total samples (bytes 18–25 of the file).
    const rate = (b[18]! << 12) | (b[19]! << 4) | (b[20]! >> 4)
    const total = (b[21]! & 0x0f) * 2 ** 32 + b.readUInt32BE(22)
    return rate > 0 && total > 0 ? total / rate : null
  }
  return null
}
