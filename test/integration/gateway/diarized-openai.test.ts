import OpenAI, { APIError, toFile } from 'openai'
import type { TranscriptionDiarized, TranscriptionStreamEvent } from 'openai/resources/audio/transcriptions'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TONE_VOICES_HZ, toneWav, type ToneTurn } from '../../sim/http'
import { silenceWav, startRig, type GatewayRig } from './setup'

/**
 * Issue 43: diarized transcription on OpenAI's endpoint, read by the official openai client
 * (6.29.0, the shapes recorded in test/fixtures/openai-diarized/) against the daemon and the
 * simulated asr, whose diarizer tells the synthetic voices (tones) apart by ear.
 */
describe('diarized transcription the OpenAI way', () => {
  let rig: GatewayRig
  let client: OpenAI

  beforeAll(async () => {
    rig = await startRig()
    client = new OpenAI({ baseURL: `${rig.daemon.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60_000 })
  })
  afterAll(async () => {
    await rig?.stop()
  })

  const wavFile = (b: Buffer, name = 'meeting.wav') => toFile(b, name, { type: 'audio/wav' })
  const dataUrl = (b: Buffer, mime = 'audio/wav'): string => `data:${mime};base64,${b.toString('base64')}`
  const voice = (k: number, seconds: number): ToneTurn => ({ hz: TONE_VOICES_HZ[k]!, seconds })
  const quiet = (seconds: number): ToneTurn => ({ hz: 0, seconds })

  it('answers diarized_json in OpenAI’s shape: typed segments labelled A, B in order of first speech', async () => {
    const r = (await client.audio.transcriptions.create({
      file: await wavFile(silenceWav(12)),
      model: 'asr',
      response_format: 'diarized_json',
    })) as TranscriptionDiarized
    expect(r.task).toBe('transcribe')
    expect(r.duration).toBeCloseTo(12, 1)
    expect(r.usage).toEqual({ type: 'duration', seconds: 12 })
    expect(r.segments.length).toBeGreaterThanOrEqual(3)
    for (const s of r.segments) {
      expect(s.type).toBe('transcript.text.segment')
      expect(typeof s.id).toBe('string')
      expect(s.end).toBeGreaterThan(s.start)
    }
    expect(r.segments.map((s) => s.speaker).slice(0, 3)).toEqual(['A', 'B', 'A'])
    expect(r.segments[0]!.text).toBe('Good morning, everyone.')
    expect(r.text.startsWith('Good morning, everyone. Morning. Shall we start')).toBe(true)
    expect(new Set(r.segments.map((s) => s.id)).size).toBe(r.segments.length)
    // The same pipeline as transcribe-with-speakers: word timestamps and diarize-chunk, in parallel.
    const paths = rig.asr.requests.slice(-2).map((q) => q.path)
    expect(paths.sort()).toEqual(['/v1/audio/diarize-chunk', '/v1/audio/transcriptions'])
  })

  it('answers json, text, srt and vtt from the pipeline when diarized, srt and vtt with the speaker in each cue', async () => {
    const ask = async (format: 'json' | 'text' | 'srt' | 'vtt') =>
      client.audio.transcriptions.create({
        file: await wavFile(silenceWav(12)),
        model: 'gpt-4o-transcribe-diarize',
        response_format: format,
      })
    const json = (await ask('json')) as { text: string; usage?: unknown }
    expect(json.text.startsWith('Good morning, everyone.')).toBe(true)
    expect(json.usage).toEqual({ type: 'duration', seconds: 12 })
    expect(String(await ask('text')).startsWith('Good morning, everyone. Morning.')).toBe(true)
    const srt = String(await ask('srt'))
    expect(srt).toMatch(/^1\n00:00:00,200 --> 00:00:01,\d{3}\n\[A\] Good morning, everyone\.\n\n2\n/)
    expect(srt).toMatch(/\n\[B\] Morning\. Shall we start/)
    const vtt = String(await ask('vtt'))
    expect(vtt).toMatch(/^WEBVTT\n\n00:00:00\.200 --> 00:00:01\.\d{3}\n<v A>Good morning, everyone\.\n/)
    expect(vtt).toMatch(/<v B>Morning\./)
  })

  it('relays every other format to the asr as before, even with a diarize model', async () => {
    const before = rig.asr.requests.length
    const r = await client.audio.transcriptions.create({
      file: await wavFile(silenceWav(6)),
      model: 'gpt-4o-transcribe-diarize',
      response_format: 'verbose_json',
      temperature: 0.2,
    })
    expect(r.text).toContain('Good morning')
    expect(rig.asr.requests.length).toBe(before + 1)
    expect(rig.asr.forms.at(-1)).toMatchObject({ response_format: 'verbose_json', temperature: '0.2' })
  })

  it('names the speakers whose reference clips it was given, and letters the others', async () => {
    const recording = toneWav([
      voice(2, 6),
      quiet(1),
      voice(0, 5),
      quiet(1),
      voice(1, 7),
      quiet(1),
      voice(0, 4),
      quiet(1),
      voice(2, 5),
    ])
    const r = (await client.audio.transcriptions.create({
      file: await wavFile(recording),
      model: 'asr',
      response_format: 'diarized_json',
      known_speaker_names: ['customer', 'agent'],
      known_speaker_references: [dataUrl(toneWav([voice(0, 3)])), dataUrl(toneWav([voice(1, 4)]))],
    })) as TranscriptionDiarized
    const at = (t: number): string | undefined => r.segments.find((s) => s.start <= t && s.end >= t)?.speaker
    expect(at(3)).toBe('A')
    // The simulated words leave gaps (its script's pauses): the points asked about are inside words.
    expect(at(7.5)).toBe('customer')
    expect(at(11.5)).toBe('customer')
    expect(at(16)).toBe('agent')
    expect(at(23)).toBe('customer')
    expect(at(26.5)).toBe('A')
    expect(new Set(r.segments.map((s) => s.speaker))).toEqual(new Set(['A', 'customer', 'agent']))
  })

  it('streams transcript.text.segment events, then transcript.text.done with the text and usage', async () => {
    const stream = await client.audio.transcriptions.create({
      file: await wavFile(silenceWav(12)),
      model: 'asr',
      response_format: 'diarized_json',
      stream: true,
    })
    const events: TranscriptionStreamEvent[] = []
    for await (const e of stream) events.push(e)
    const types = events.map((e) => e.type)
    expect(types.at(-1)).toBe('transcript.text.done')
    expect(types.slice(0, -1).every((t) => t === 'transcript.text.segment')).toBe(true)
    expect(types.length).toBeGreaterThan(3)
    const segs = events.filter((e) => e.type === 'transcript.text.segment')
    expect(segs[0]).toMatchObject({ id: 'seg_0', speaker: 'A', text: 'Good morning, everyone.' })
    const done = events.at(-1) as { text: string; usage: unknown }
    expect(done.text).toBe(segs.map((s) => s.text).join(' '))
    expect(done.usage).toEqual({ type: 'duration', seconds: 12 })
  })

  it('refuses bad speaker references and chunking strategies with 400 naming the field, before the asr hears anything', async () => {
    const ref = (s: number): string => dataUrl(toneWav([voice(0, s)]))
    const cases: { fields: Record<string, unknown>; param: string; message: RegExp }[] = [
      {
        fields: { known_speaker_names: ['a'], known_speaker_references: [ref(1)] },
        param: 'known_speaker_references[0]',
        message: /1\.0 s long.*2–10 s/,
      },
      {
        fields: { known_speaker_names: ['a'], known_speaker_references: [ref(12)] },
        param: 'known_speaker_references[0]',
        message: /12\.0 s long/,
      },
      {
        fields: {
          known_speaker_names: ['a', 'b', 'c', 'd', 'e'],
          known_speaker_references: [1, 2, 3, 4, 5].map(() => ref(3)),
        },
        param: 'known_speaker_names',
        message: /at most 4/,
      },
      {
        fields: {
          known_speaker_names: ['a'],
          known_speaker_references: [dataUrl(Buffer.from('hello, not audio at all'), 'text/plain')],
        },
        param: 'known_speaker_references[0]',
        message: /not audio/,
      },
      {
        fields: { known_speaker_names: ['a'], known_speaker_references: [dataUrl(Buffer.from('0123456789abcdef'))] },
        param: 'known_speaker_references[0]',
        message: /not audio/,
      },
      {
        fields: { known_speaker_names: ['a'], known_speaker_references: ['data:audio/wav;base64,@@@'] },
        param: 'known_speaker_references[0]',
        message: /data URL/,
      },
      {
        fields: { known_speaker_names: ['a', 'b'], known_speaker_references: [ref(3)] },
        param: 'known_speaker_references',
        message: /2 entries.*1/,
      },
      { fields: { chunking_strategy: { type: 'semantic' } }, param: 'chunking_strategy', message: /server_vad/ },
      { fields: { chunking_strategy: 'sometimes' }, param: 'chunking_strategy', message: /'auto'/ },
    ]
    const before = rig.asr.requests.length
    for (const c of cases) {
      const err = await client.audio.transcriptions
        .create({
          file: await wavFile(silenceWav(3)),
          model: 'asr',
          response_format: 'diarized_json',
          ...c.fields,
        } as never)
        .then(
          () => null,
          (e: unknown) => e,
        )
      expect(err, c.param).toBeInstanceOf(APIError)
      const e = err as APIError
      expect(e.status, c.param).toBe(400)
      expect((e.error as { param?: string }).param, c.param).toBe(c.param)
      expect(e.message, c.param).toMatch(c.message)
    }
    expect(rig.asr.requests.length).toBe(before)
    // Accepted: auto, and a server VAD config.
    for (const chunking_strategy of [
      'auto',
      { type: 'server_vad', threshold: 0.5, silence_duration_ms: 500 },
    ] as const) {
      const r = (await client.audio.transcriptions.create({
        file: await wavFile(silenceWav(3)),
        model: 'asr',
        response_format: 'diarized_json',
        chunking_strategy,
      })) as TranscriptionDiarized
      expect(r.task).toBe('transcribe')
    }
  })

  it('answers an asr 500 with 503, Retry-After 60 and the message the client shows, and asks for a probe', async () => {
    await rig.asr.setFault({ kind: 'error500', message: 'CUFFT_INTERNAL_ERROR' })
    try {
      const err = (await client.audio.transcriptions
        .create({ file: await wavFile(silenceWav(3)), model: 'asr', response_format: 'diarized_json' })
        .then(
          () => null,
          (e: unknown) => e,
        )) as APIError
      expect(err).toBeInstanceOf(APIError)
      expect(err.status).toBe(503)
      expect(err.headers?.get('retry-after')).toBe('60')
      expect(err.message).toMatch(/asr failed \(HTTP 500: CUFFT_INTERNAL_ERROR\)/)
      expect(rig.daemon.logs.lines.some((l) => /deep-health probe requested.*"service":"asr"/.test(l))).toBe(true)
    } finally {
      await rig.asr.setFault('none')
    }
  })

  it('names speakers in the playground’s diarized upload too, and refuses a 1 s reference naming it', async () => {
    const post = (known: { name: string; audio_base64: string }[]) =>
      rig.daemon.admin('/api/gateway/playground/transcribe', {
        method: 'POST',
        body: JSON.stringify({
          audio_base64: toneWav([voice(0, 6), quiet(1), voice(1, 6)]).toString('base64'),
          filename: 'take.wav',
          known_speakers: known,
        }),
      })
    const res = await post([{ name: 'agent', audio_base64: toneWav([voice(1, 3)]).toString('base64') }])
    expect(res.status).toBe(200)
    const body = (await res.json()) as { speakers_detected: string[] }
    expect(body.speakers_detected).toEqual(['Speaker_1', 'agent'])
    const bad = await post([{ name: 'agent', audio_base64: toneWav([voice(1, 1)]).toString('base64') }])
    expect(bad.status).toBe(400)
    expect(((await bad.json()) as { detail: string }).detail).toMatch(/known_speakers\[0\] is 1\.0 s long/)
  })

  it('keeps each of three voices’ label across the chunks of a 30-minute recording', async () => {
    // Turns of 20–50 s in a fixed shuffled order, 1 s quiet between: every 5-minute chunk hears the
    // voices in another order, so its own labels (speaker_0…) name other voices than the last one's.
    const order = [0, 1, 2, 1, 0, 2, 2, 0, 1, 0, 2, 1]
    const turns: ToneTurn[] = []
    const truth: { from: number; to: number; voice: number }[] = []
    let t = 0
    for (let i = 0; t < 1800 - 60; i++) {
      const k = order[i % order.length]!
      const secs = 20 + ((i * 7) % 31)
      truth.push({ from: t, to: t + secs, voice: k })
      turns.push(voice(k, secs), quiet(1))
      t += secs + 1
    }
    turns.push(quiet(1800 - t))
    const r = (await client.audio.transcriptions.create({
      file: await wavFile(toneWav(turns, 4000), 'long.wav'),
      model: 'asr',
      response_format: 'diarized_json',
    })) as TranscriptionDiarized
    expect(r.duration).toBeCloseTo(1800, 0)
    const labelOf = new Map<number, Set<string>>()
    for (const s of r.segments) {
      const mid = (s.start + s.end) / 2
      const turn = truth.find((x) => x.from <= mid && x.to >= mid)
      if (!turn) continue
      labelOf.set(turn.voice, (labelOf.get(turn.voice) ?? new Set()).add(s.speaker))
    }
    expect([...labelOf.keys()].sort()).toEqual([0, 1, 2])
    for (const labels of labelOf.values()) expect(labels.size).toBe(1)
    expect(new Set([...labelOf.values()].map((l) => [...l][0]))).toEqual(new Set(['A', 'B', 'C']))
    // Cut into chunks: more than one diarize-chunk request went upstream.
    const chunks = rig.asr.requests.filter((q) => q.path === '/v1/audio/diarize-chunk').slice(-7)
    expect(chunks.length).toBe(7)
  }, 120_000)

  it('ends a stream whose asr fails after the first chunk with one error event the client throws', async () => {
    // Last in this block: the probe it sets off posts to the asr in the background. Two chunks: the first chunk's two asr calls are answered, then the asr is wedged.
    rig.asr.wedgeAfter(2, 'CUFFT_INTERNAL_ERROR')
    try {
      const stream = await client.audio.transcriptions.create({
        file: await wavFile(toneWav([voice(0, 150), voice(1, 160)], 4000)),
        model: 'asr',
        response_format: 'diarized_json',
        stream: true,
      })
      const seen: string[] = []
      const consume = async (): Promise<void> => {
        for await (const e of stream) seen.push(e.type)
      }
      await expect(consume()).rejects.toThrow(/asr failed \(HTTP 500: CUFFT_INTERNAL_ERROR\)/)
      expect(seen.length).toBeGreaterThan(0)
      expect(seen.every((t) => t === 'transcript.text.segment')).toBe(true)
    } finally {
      rig.asr.containerStarted()
    }
  })
})

describe('diarized transcription and a restricted consumer key', () => {
  let rig: GatewayRig
  beforeAll(async () => {
    rig = await startRig({ CONSUMER_API_KEYS: 'legacy-lan-key-0123456789' })
  })
  afterAll(async () => {
    await rig?.stop()
  })

  it('refuses diarized_json to a key whose models leave out the asr model, and serves a key that lists it', async () => {
    const key = async (models: string[]): Promise<OpenAI> => {
      const res = await rig.daemon.admin('/api/consumer-keys', {
        method: 'POST',
        body: JSON.stringify({ name: `k${models.length}`, models }),
      })
      const { secret } = (await res.json()) as { secret: string }
      return new OpenAI({ baseURL: `${rig.daemon.url}/v1`, apiKey: secret, maxRetries: 0, timeout: 30_000 })
    }
    const ask = async (c: OpenAI) =>
      c.audio.transcriptions.create({
        file: await toFile(silenceWav(3), 'a.wav', { type: 'audio/wav' }),
        model: 'asr',
        response_format: 'diarized_json',
      })
    const before = rig.asr.requests.length
    const err = (await ask(await key(['sim/Qwen3-8B-Instruct'])).then(
      () => null,
      (e: unknown) => e,
    )) as APIError
    expect(err).toBeInstanceOf(APIError)
    expect(err.status).toBe(403)
    expect(rig.asr.requests.filter((q) => q.method === 'POST').length).toBe(
      rig.asr.requests.slice(0, before).filter((q) => q.method === 'POST').length,
    )
    const ok = (await ask(await key([rig.asr.model]))) as TranscriptionDiarized
    expect(ok.task).toBe('transcribe')
  })
})
