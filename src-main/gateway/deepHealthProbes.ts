/**
 * Deep health's probes (spec 1, 3.3, 4.6): one synthetic request per kind of service, in the protocol
 * that service speaks — 1 s of silence to asr, a short sentence to tts, one token from the llm — kept
 * beside those protocols (audio/, relay/). The scheduler (services/deepHealth.ts) gets them
 * passed in by the composition root, with the outcome and wedge rules it defines.
 */
import { httpCall, HttpUnreachable, type HttpAnswer, type HttpCall } from '../lib/httpClient'
import { failed, NoAnswer, type ProbeOutcome, type ProbeSet } from '../services/types'
import { encodeMultipart, type MemoryFile } from './audio/multipart'
import { voiceLanguage } from './audio/speech'
import { upstreamDetail } from './relay/wire'

export const IDLE_NOTE = 'no model currently loaded (idle)'

/** `seconds` of digital silence as a 16 kHz, 16-bit mono PCM WAV, built in memory. */
export function silenceWav(seconds = 1, sampleRate = 16_000): Buffer {
  const dataBytes = Math.round(seconds * sampleRate) * 2
  const buf = Buffer.alloc(44 + dataBytes)
  buf.write('RIFF', 0, 'ascii')
  buf.writeUInt32LE(36 + dataBytes, 4)
  buf.write('WAVE', 8, 'ascii')
  buf.write('fmt ', 12, 'ascii')
  buf.writeUInt32LE(16, 16)
  buf.writeUInt16LE(1, 20) // PCM
  buf.writeUInt16LE(1, 22) // mono
  buf.writeUInt32LE(sampleRate, 24)
  buf.writeUInt32LE(sampleRate * 2, 28)
  buf.writeUInt16LE(2, 32)
  buf.writeUInt16LE(16, 34)
  buf.write('data', 36, 'ascii')
  buf.writeUInt32LE(dataBytes, 40)
  return buf
}

const ok = (note: string | null = null): ProbeOutcome => ({ ok: true, error: null, note, status: null })
async function call(url: string, init: Omit<HttpCall, 'signal'>, signal: AbortSignal): Promise<HttpAnswer> {
  try {
    return await httpCall(url, { ...init, signal })
  } catch (err) {
    if (signal.aborted) throw new NoAnswer(`no answer from ${new URL(url).pathname} in time`, false)
    const why = err instanceof HttpUnreachable ? (err.code ?? err.message) : (err as Error).message
    throw new NoAnswer(`unreachable (${why})`, true)
  }
}

/** A multipart form of `fields` and at most one in-memory file, as a call's body and headers. */
function formCall(fields: readonly (readonly [string, string])[], file?: MemoryFile): Omit<HttpCall, 'signal'> {
  const form = encodeMultipart(fields, file)
  return {
    method: 'POST',
    headers: { 'content-type': form.contentType, 'content-length': form.length },
    body: form.body,
  }
}

/** A non-2xx answer as a failing outcome: status and the service's own error text. */
async function httpFailure(path: string, res: HttpAnswer): Promise<ProbeOutcome> {
  const text = await res.text(64 * 1024).catch(() => '')
  return failed(`HTTP ${res.status} from ${path}: ${upstreamDetail(text)}`, res.status)
}

/** Spec 1, 4.6 rule 1: 1 s of silence to the transcription endpoint. */
async function probeAsr(base: string, signal: AbortSignal): Promise<ProbeOutcome> {
  const form = formCall([['response_format', 'json']], {
    field: 'file',
    filename: 'deep-health-silence.wav',
    contentType: 'audio/wav',
    bytes: silenceWav(),
  })
  const res = await call(`${base}/v1/audio/transcriptions`, form, signal)
  if (!res.ok) return httpFailure('/v1/audio/transcriptions', res)
  const body = (await res.json().catch(() => null)) as { text?: unknown } | null
  if (body === null || typeof body.text !== 'string') return failed('the transcription answer has no text field')
  return ok()
}

/** A voice the tts lists, with its language (the synthesize call needs both). */
async function ttsVoice(
  base: string,
  signal: AbortSignal,
): Promise<{ voice: string; language: string } | ProbeOutcome> {
  const res = await call(`${base}/v1/voices`, { method: 'GET' }, signal)
  if (!res.ok) return httpFailure('/v1/voices', res)
  const body = (await res.json().catch(() => null)) as { voices?: unknown } | null
  const list = Array.isArray(body?.voices) ? (body.voices as unknown[]) : []
  for (const v of list) {
    const id = typeof v === 'string' ? v : (v as { id?: unknown } | null)?.id
    const lang = typeof v === 'object' && v !== null ? (v as { language?: unknown }).language : undefined
    if (typeof id !== 'string') continue
    const language = typeof lang === 'string' && lang !== '' ? lang : voiceLanguage(id)
    if (language) return { voice: id, language }
  }
  return failed('the tts lists no voice to synthesize with')
}

/** The synthesized probe sentence is a second or two of audio; a tts that sends more is not answering it. */
const TTS_AUDIO_LIMIT = 16 * 1024 * 1024

/** Spec 1, 4.6 rule 2: a short text as multipart to the synthesize endpoint. */
async function probeTts(base: string, signal: AbortSignal): Promise<ProbeOutcome> {
  const v = await ttsVoice(base, signal)
  if ('ok' in v) return v
  const form = formCall([
    ['text', 'Health check.'],
    ['language', v.language],
    ['voice', v.voice],
  ])
  const res = await call(`${base}/v1/audio/synthesize`, form, signal)
  if (!res.ok) return httpFailure('/v1/audio/synthesize', res)
  const audio = await res.bytes(TTS_AUDIO_LIMIT)
  if (audio.length === 0) return failed('the tts answered no audio')
  return ok()
}

/** Spec 1, 3.3: nothing answering or an empty model list is an idle llm; otherwise one token. */
async function probeLlm(base: string, signal: AbortSignal): Promise<ProbeOutcome> {
  let res: HttpAnswer
  try {
    res = await call(`${base}/v1/models`, { method: 'GET' }, signal)
  } catch (err) {
    if (err instanceof NoAnswer && err.unreachable) return ok(IDLE_NOTE)
    throw err
  }
  if (!res.ok) return httpFailure('/v1/models', res)
  const body = (await res.json().catch(() => null)) as { data?: { id?: unknown }[] } | null
  const model = (body?.data ?? []).map((m) => m.id).find((id): id is string => typeof id === 'string')
  if (model === undefined) return ok(IDLE_NOTE)
  const done = await call(
    `${base}/v1/completions`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, prompt: 'ping', max_tokens: 1, temperature: 0 }),
    },
    signal,
  )
  if (!done.ok) return httpFailure('/v1/completions', done)
  await done.bytes()
  return ok(`one token from ${model}`)
}

/** The probes of spec 1, 4.6 and 3.3, speaking each service's own HTTP protocol. */
export const DEEP_HEALTH_PROBES: ProbeSet = {
  asr: probeAsr,
  tts: probeTts,
  llm: probeLlm,
}
