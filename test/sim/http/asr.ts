import type http from 'node:http'
import {
  TONE_WINDOW_S,
  audioDuration,
  parseMultipart,
  sendJson,
  startFake,
  type FakeContext,
  type FakeOptions,
  type FakeServer,
} from './common'

/**
 * A fake asr service: `/v1/audio/transcriptions` (json, text, verbose_json with segments and
 * words) and `/v1/audio/diarize-chunk` (spec 1, 4.8). Both read the same scripted two-speaker
 * dialogue, laid out over the uploaded audio's duration, so words and speaker turns agree.
 */
export interface FakeAsrOptions extends FakeOptions {
  model?: string
  /** Words carry a leading space, as some asr engines return them. */
  leadingSpace?: boolean
}

export interface FakeAsr extends FakeServer {
  readonly model: string
  /**
   * A wedged asr, as a broken CUDA context leaves one: /health and /v1/models still answer, every
   * transcription and diarization is a 500 with `cudaErrorUnknown`, until the container restarts.
   */
  wedge(message?: string): void
  /** Wedges the asr once `n` more transcription or diarization requests have been answered. */
  wedgeAfter(n: number, message?: string): void
  readonly wedged: boolean
  /** The container (re)started: a fresh process, so a wedge is gone (the sim calls this on `running`). */
  containerStarted(): void
  /** The text fields of each multipart request, as parsed (repeated names become arrays). */
  readonly forms: Record<string, string | string[]>[]
}

/** One scripted turn: who speaks, the tokens (punctuation may be its own token), and the pause after it (s). */
const SCRIPT: { speaker: number; tokens: string[]; pauseAfter: number }[] = [
  { speaker: 0, tokens: ['Good', 'morning', ',', 'everyone', '.'], pauseAfter: 0.3 },
  {
    speaker: 1,
    tokens: ['Morning', '.', 'Shall', 'we', 'start', 'with', 'the', 'cluster', 'status', '?'],
    pauseAfter: 0.2,
  },
  { speaker: 0, tokens: ['Yes', ':', 'node1', 'is', 'up', ',', 'node2', 'is', 'warming', 'up.'], pauseAfter: 2.0 },
  { speaker: 0, tokens: ['Sorry', ',', 'I', 'was', 'checking', 'the', 'logs', '.'], pauseAfter: 0.4 },
  { speaker: 1, tokens: ['No', 'problem', '.', 'Anything', 'unusual', '?'], pauseAfter: 0.3 },
  { speaker: 0, tokens: ['Nothing', 'at', 'all', ';', 'all', 'green', '!'], pauseAfter: 1.0 },
]
const WORD_S = 0.32

export interface ScriptedWord {
  word: string
  start: number
  end: number
  speaker: number
}

/** The dialogue laid over `duration` seconds, repeating the script until the audio ends. */
export function scriptedWords(duration: number): ScriptedWord[] {
  const out: ScriptedWord[] = []
  let t = 0.2
  for (let turn = 0; turn < 100_000; turn++) {
    const s = SCRIPT[turn % SCRIPT.length]!
    if (t + s.tokens.length * WORD_S > duration) break
    for (const w of s.tokens) {
      out.push({ word: w, start: round(t), end: round(t + WORD_S * 0.85), speaker: s.speaker })
      t += WORD_S
    }
    t += s.pauseAfter
  }
  return out
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000
}

/** A deterministic 192-float voice fingerprint per speaker. */
export function fingerprint(speaker: number): number[] {
  let x = 0x9e3779b9 ^ (speaker + 1)
  const v: number[] = []
  for (let i = 0; i < 192; i++) {
    x = (x * 1664525 + 1013904223) >>> 0
    v.push(round((x / 0xffffffff) * 2 - 1))
  }
  return v
}

/**
 * The synthetic voices: voice k is a pure tone of TONE_VOICES_HZ[k]. A recording made of them
 * (toneWav) is diarized by what it sounds like, window by window, as a real diarizer would: labels
 * are chunk-local (`speaker_0` is whoever speaks first in this file) and each fingerprint is the
 * voice's own plus noise that differs from file to file, so only similarity tells voices apart.
 */
export const TONE_VOICES_HZ = [220, 330, 495, 740] as const

function voiceOf(hz: number | null): number | null {
  if (hz === null) return null
  const k = TONE_VOICES_HZ.findIndex((v) => Math.abs(hz - v) / v < 0.1)
  return k < 0 ? null : k
}

/** A voice's fingerprint as heard in one file: its own, plus noise seeded by the file. */
export function heardFingerprint(voice: number, seed: number): number[] {
  let x = (seed * 2654435761 + voice * 40503) >>> 0
  return fingerprint(voice).map((v) => {
    x = (x * 1664525 + 1013904223) >>> 0
    return round(v + ((x / 0xffffffff) * 2 - 1) * 0.35)
  })
}

function toneDiarization(tones: readonly (number | null)[], seed: number): Record<string, unknown> {
  const w = TONE_WINDOW_S
  const segments: { start_s: number; end_s: number; speaker: string; confidence: number | null; voice: number }[] = []
  const local = new Map<number, string>()
  tones.forEach((hz, i) => {
    const voice = voiceOf(hz)
    if (voice === null) return
    if (!local.has(voice)) local.set(voice, `speaker_${local.size}`)
    const last = segments[segments.length - 1]
    if (last && last.voice === voice && i * w - last.end_s < 0.8) last.end_s = round((i + 1) * w)
    else
      segments.push({
        start_s: round(i * w),
        end_s: round((i + 1) * w),
        speaker: local.get(voice)!,
        confidence: 0.9,
        voice,
      })
  })
  return {
    duration: round(tones.length * w),
    segments: segments.map(({ voice: _v, ...s }) => s),
    speakers_detected: [...local.values()],
    fingerprints: Object.fromEntries([...local].map(([voice, label]) => [label, heardFingerprint(voice, seed)])),
    models: { diarization: 'sim/sortformer-4spk', embedding: 'sim/titanet-small' },
  }
}

function first(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v
}

export async function startFakeAsr(opts: FakeAsrOptions = {}): Promise<FakeAsr> {
  const model = opts.model ?? 'sim/parakeet-tdt-0.6b'
  const lead = opts.leadingSpace ?? true
  const forms: Record<string, string | string[]>[] = []
  let wedge: string | null = null
  let wedgeIn: { left: number; message: string } | null = null

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse, ctx: FakeContext): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0]
    if (req.method === 'GET' && path === '/v1/models') {
      req.resume()
      return sendJson(res, 200, {
        object: 'list',
        data: [{ id: model, object: 'model', created: 1_767_225_600, owned_by: 'asr' }],
      })
    }
    if (req.method === 'GET' && path === '/health') {
      req.resume()
      return sendJson(res, 200, { status: 'ok', model })
    }
    const transcribe = path === '/v1/audio/transcriptions'
    if (req.method !== 'POST' || (!transcribe && path !== '/v1/audio/diarize-chunk')) {
      req.resume()
      return sendJson(res, 404, { detail: `no route ${req.method} ${path}` })
    }
    if (wedgeIn !== null && wedgeIn.left-- <= 0) {
      wedge = wedgeIn.message
      wedgeIn = null
    }
    if (wedge !== null) {
      req.resume()
      return sendJson(res, 500, { error: { message: wedge, type: 'InternalServerError', code: 500 }, detail: wedge })
    }
    if (!(req.headers['content-type'] ?? '').startsWith('multipart/form-data'))
      return sendJson(res, 400, { detail: 'expected multipart/form-data' })
    let form: Awaited<ReturnType<typeof parseMultipart>>
    try {
      form = await parseMultipart(req, res)
    } catch (err) {
      return sendJson(res, 400, { detail: `bad multipart body: ${(err as Error).message}` })
    }
    forms.push(form.fields)
    const file = form.files.find((f) => f.field === 'file')
    if (!file) return sendJson(res, 400, { detail: "field 'file' is required" })
    if (ctx.fault.kind === 'slow' && !(await ctx.sleep(ctx.fault.delayMs))) return
    if (ctx.fault.kind === 'reset') {
      res.socket?.destroy()
      return
    }
    const duration = round(audioDuration(file))
    const words = scriptedWords(duration)

    if (!transcribe && file.tones.some((t) => t !== null))
      return sendJson(res, 200, toneDiarization(file.tones, file.bytes))
    if (!transcribe) {
      const segments: { start_s: number; end_s: number; speaker: string; confidence: number | null }[] = []
      for (const w of words) {
        const last = segments[segments.length - 1]
        const label = `speaker_${w.speaker}`
        if (last && last.speaker === label && w.start - last.end_s < 0.8) last.end_s = w.end
        else segments.push({ start_s: w.start, end_s: w.end, speaker: label, confidence: 0 })
      }
      // Confidence is a mean probability; the last segment of a chunk has too few frames, so null (spec 1, 4.8 rule 2).
      segments.forEach(
        (s, i) => (s.confidence = i === segments.length - 1 && i > 0 ? null : round(0.8 + ((i * 7) % 19) / 100)),
      )
      const speakers = [...new Set(segments.map((s) => s.speaker))]
      return sendJson(res, 200, {
        duration,
        segments,
        speakers_detected: speakers,
        fingerprints: Object.fromEntries(speakers.map((s) => [s, fingerprint(Number(s.split('_')[1]))])),
        models: { diarization: 'sim/sortformer-4spk', embedding: 'sim/titanet-small' },
      })
    }

    const format = first(form.fields.response_format) ?? 'json'
    const granularities = ([] as string[]).concat(
      form.fields['timestamp_granularities[]'] ?? form.fields.timestamp_granularities ?? [],
    )
    const text = words
      .map((w) => w.word)
      .join(' ')
      .replace(/ ([.,:;!?])/g, '$1')
    if (format === 'text') {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' })
      res.end(text)
      return
    }
    if (format !== 'verbose_json') return sendJson(res, 200, { text })
    const segments: { id: number; start: number; end: number; text: string }[] = []
    let cur: ScriptedWord[] = []
    const flush = (): void => {
      if (cur.length === 0) return
      segments.push({
        id: segments.length,
        start: cur[0]!.start,
        end: cur[cur.length - 1]!.end,
        text: cur
          .map((w) => w.word)
          .join(' ')
          .replace(/ ([.,:;!?])/g, '$1'),
      })
      cur = []
    }
    for (const w of words) {
      const prev = cur[cur.length - 1]
      if (prev && (prev.speaker !== w.speaker || w.start - prev.end > 1)) flush()
      cur.push(w)
    }
    flush()
    const body: Record<string, unknown> = {
      task: 'transcribe',
      language: first(form.fields.language) ?? 'en',
      duration,
      text,
    }
    if (granularities.length === 0 || granularities.includes('segment')) body.segments = segments
    if (granularities.includes('word'))
      body.words = words.map((w) => ({ word: lead ? ` ${w.word}` : w.word, start: w.start, end: w.end }))
    sendJson(res, 200, body)
  }

  const fake = await startFake('asr', handle, opts)
  const asr = Object.assign(fake, {
    model,
    forms,
    wedge(message = 'CUDA error: cudaErrorUnknown: an unknown internal error occurred (transcription)') {
      wedge = message
    },
    wedgeAfter(
      n: number,
      message = 'CUDA error: cudaErrorUnknown: an unknown internal error occurred (transcription)',
    ) {
      wedgeIn = { left: n, message }
    },
    containerStarted() {
      wedge = null
      wedgeIn = null
    },
  })
  // A getter, so the state is read live (Object.assign would copy its value once).
  return Object.defineProperty(asr, 'wedged', { get: () => wedge !== null, enumerable: true }) as FakeAsr
}
