import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readSse } from '../../helpers/daemon'
import { embed } from '../../fakes/embeddings'
import { silenceWav, startRig, waitFor, type GatewayRig } from './setup'

describe('gateway speech, diarization, redaction, embeddings and search', () => {
  let rig: GatewayRig
  let url: string

  beforeAll(async () => {
    rig = await startRig()
    url = rig.daemon.url
    rig.qdrant.collections.set('docs_v1', [
      { id: 1, vector: embed('how to restart the asr container'), payload: { title: 'Restarting asr' } },
      { id: 'b2', vector: embed('licensing keys and machines'), payload: { title: 'Licensing' } },
      { id: 3, vector: embed('wake on lan magic packet'), payload: { title: 'Wake' } },
    ])
  })
  afterAll(async () => {
    await rig?.stop()
  })

  const post = (path: string, body: unknown): Promise<Response> =>
    fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const upload = (path: string, seconds: number): Promise<Response> => {
    const fd = new FormData()
    fd.append('file', new Blob([new Uint8Array(silenceWav(seconds))], { type: 'audio/wav' }), 'talk.wav')
    return fetch(url + path, { method: 'POST', body: fd })
  }

  it('returns a diarized transcript: speaker blocks split at speaker changes and long silences', async () => {
    const res = await upload('/api/audio/transcribe-with-speakers', 30)
    expect(res.status).toBe(200)
    const body = (await res.json()) as {
      duration: number
      language: string
      speakers_detected: string[]
      segments: { start_ms: number; end_ms: number; speaker: string; text: string }[]
      models: { transcription: string; diarization: string }
    }
    expect(body.duration).toBe(30)
    expect(body.language).toBe('en')
    expect(body.speakers_detected).toEqual(['Speaker_1', 'Speaker_2'])
    expect(body.models).toEqual({ transcription: rig.asr.model, diarization: 'sim/sortformer-4spk' })
    expect(body.segments.slice(0, 4).map((s) => [s.speaker, s.text])).toEqual([
      ['Speaker_1', 'Good morning, everyone.'],
      ['Speaker_2', 'Morning. Shall we start with the cluster status?'],
      ['Speaker_1', 'Yes: node1 is up, node2 is warming up.'],
      // Same speaker, but after a 2 s silence: a new block.
      ['Speaker_1', 'Sorry, I was checking the logs.'],
    ])
    for (const s of body.segments) expect(s.end_ms).toBeGreaterThan(s.start_ms)
    // Both upstream calls ran: word-level transcription and diarization.
    const forms = rig.asr.forms.slice(-2)
    expect(forms.some((f) => JSON.stringify(f.timestamp_granularities) === '["word","segment"]')).toBe(true)
    // The spooled upload is gone once the answer is out.
    const spool = path.join(rig.daemon.dataDir, 'tmp')
    const dirs = fs.readdirSync(spool).filter((d) => d.startsWith('uploads-'))
    expect(dirs).toHaveLength(1)
    await waitFor(() => fs.readdirSync(path.join(spool, dirs[0]!)).length === 0)
  })

  it('relays diarize-chunk JSON as is (null confidence kept)', async () => {
    const res = await upload('/api/audio/diarize-chunk', 12)
    expect(res.status).toBe(200)
    const body = (await res.json()) as {
      segments: { start_s: number; end_s: number; speaker: string; confidence: number | null }[]
      speakers_detected: string[]
      fingerprints: Record<string, number[]>
      models: Record<string, string>
    }
    expect(body.speakers_detected).toEqual(['speaker_0', 'speaker_1'])
    expect(body.fingerprints.speaker_0).toHaveLength(192)
    expect(body.segments.at(-1)!.confidence).toBeNull()
    expect(body.segments[0]!.confidence).toBeGreaterThan(0)
    expect(body.models).toEqual({ diarization: 'sim/sortformer-4spk', embedding: 'sim/titanet-small' })
  })

  it('streams a large upload through to the asr intact', async () => {
    const big = silenceWav(60 * 10) // ~19 MB
    const fd = new FormData()
    fd.append('model', 'asr')
    fd.append('file', new Blob([new Uint8Array(big)]), 'long.wav')
    const res = await fetch(url + '/v1/audio/transcriptions', { method: 'POST', body: fd })
    expect(res.status).toBe(200)
    const last = rig.asr.requests.at(-1)!
    expect(last.bytes).toBeGreaterThan(big.length)
    expect(last.bytes).toBeLessThan(big.length + 1024)
  })

  it('scrubs and rehydrates, with stable placeholders, inside rewritten text', async () => {
    const text =
      'Mail ana@example.com or ANA@example.com, call +1 415 555 0100, card 4111 1111 1111 1111, ' +
      'IBAN DE89 3704 0044 0532 0130 00, host 10.0.0.7, key sk-proj-abcdefghijklmnopqrstuvwxyz123456, about Project Nightjar.'
    const res = await post('/scrub', { text })
    expect(res.status).toBe(200)
    const s = (await res.json()) as {
      text: string
      session_id: string
      entities: { type: string; placeholder: string }[]
    }
    expect(s.text).toBe(
      'Mail [EMAIL_1] or [EMAIL_1], call [PHONE_1], card [CARD_1], IBAN [IBAN_1], host [IP_1], key [SECRET_1], about [TERM_1].',
    )
    expect(s.entities.map((e) => e.type)).toEqual(['EMAIL', 'EMAIL', 'PHONE', 'CARD', 'IBAN', 'IP', 'SECRET', 'TERM'])
    // An LLM rewrote the text around the placeholders (and changed a case).
    const rewritten =
      'Summary: write to [EMAIL_1]; the card [card_1] and [ IBAN_1 ] belong to Project [TERM_1]. [EMAIL_9] unknown.'
    const back = await post('/rehydrate', { text: rewritten, session_id: s.session_id })
    expect(back.status).toBe(200)
    expect(await back.json()).toEqual({
      text: 'Summary: write to ana@example.com; the card 4111 1111 1111 1111 and DE89 3704 0044 0532 0130 00 belong to Project Project Nightjar. [EMAIL_9] unknown.',
      replaced: 4,
    })
    // The same session keeps numbering across turns.
    const next = (await (
      await post('/scrub', { text: 'cc bob@example.org and ana@example.com', session_id: s.session_id })
    ).json()) as { text: string }
    expect(next.text).toBe('cc [EMAIL_2] and [EMAIL_1]')
  })

  it('forwards /v1/embeddings verbatim to EMBEDDINGS_URL', async () => {
    const raw = '{"input": ["a b", "c"],  "model": "m"}'
    const res = await fetch(url + '/v1/embeddings', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: raw,
    })
    expect(res.status).toBe(200)
    expect(((await res.json()) as { data: unknown[] }).data).toHaveLength(2)
    expect(rig.embeddings.requests.at(-1)!.body).toBe(raw)
  })

  it('searches a collection: embed, then Qdrant search, results {id, score, payload}', async () => {
    const res = await post('/api/search', { collection: 'docs_v1', query: 'restart the asr', limit: 2 })
    expect(res.status).toBe(200)
    const body = (await res.json()) as {
      results: { id: string | number; score: number; payload: Record<string, unknown> }[]
    }
    expect(body.results).toHaveLength(2)
    expect(body.results[0]).toMatchObject({ id: 1, payload: { title: 'Restarting asr' } })
    expect(body.results[0]!.score).toBeGreaterThan(body.results[1]!.score)
    expect(rig.qdrant.requests.at(-1)!.path).toBe('/collections/docs_v1/points/search')
    const missing = await post('/api/search', { collection: 'nope', query: 'x' })
    expect(missing.status).toBe(404)
  })

  it('describes itself for the Gateway view', async () => {
    const info = (await (await rig.daemon.admin('/api/gateway')).json()) as {
      upstreams: { name: string; url: string | null }[]
      endpoints: { path: string }[]
      consumer_key_required: boolean
    }
    expect(info.upstreams.find((u) => u.name === 'llm')!.url).toBe(rig.llm.url)
    expect(info.consumer_key_required).toBe(false)
    expect(info.endpoints.map((e) => e.path)).toContain('/v1/audio/transcriptions')
    const voices = (await (await rig.daemon.admin('/api/gateway/voices')).json()) as {
      voices: { id: string; language: string }[]
    }
    expect(voices.voices.find((v) => v.id === 'Multivoice.FR-FR.Louise')!.language).toBe('fr-FR')
  })

  it('runs the playground: streamed chat, speech and a diarized upload', async () => {
    const chat = await rig.daemon.admin('/api/gateway/playground/chat', {
      method: 'POST',
      body: JSON.stringify({ prompt: 'hello there' }),
    })
    const events = (await readSse(chat))
      .filter((e) => e.event === 'message')
      .map((e) => JSON.parse(e.data) as { type: string; text?: string })
    expect(
      events
        .filter((e) => e.type === 'delta')
        .map((e) => e.text)
        .join(''),
    ).toBe('You said: hello there')
    expect(events.at(-1)!.type).toBe('done')

    const sp = (await (
      await rig.daemon.admin('/api/gateway/playground/speech', {
        method: 'POST',
        body: JSON.stringify({ voice: 'Multivoice.EN-GB.Isla', input: 'hi' }),
      })
    ).json()) as { audio_base64: string; bytes: number }
    expect(Buffer.from(sp.audio_base64, 'base64').toString('ascii', 0, 4)).toBe('RIFF')

    const tr = await rig.daemon.admin('/api/gateway/playground/transcribe', {
      method: 'POST',
      body: JSON.stringify({ audio_base64: silenceWav(8).toString('base64'), filename: 'clip.wav' }),
    })
    expect(tr.status).toBe(200)
    expect(((await tr.json()) as { speakers_detected: string[] }).speakers_detected).toEqual(['Speaker_1', 'Speaker_2'])
  })
})

describe('gateway with CONSUMER_API_KEYS set', () => {
  let rig: GatewayRig
  beforeAll(async () => {
    rig = await startRig({ CONSUMER_API_KEYS: 'key-one-123456,key-two-654321' })
  })
  afterAll(async () => {
    await rig?.stop()
  })

  it('refuses a wrong or missing consumer key with 401 and accepts a right one', async () => {
    const body = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] })
    const before = rig.llm.requests.length
    const call = (auth?: string): Promise<Response> =>
      fetch(`${rig.daemon.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
        body,
      })
    expect((await call()).status).toBe(401)
    expect((await call('Bearer wrong-key-000000')).status).toBe(401)
    expect(
      (
        await fetch(`${rig.daemon.url}/scrub`, {
          method: 'POST',
          headers: { authorization: 'Bearer nope' },
          body: '{"text":"x"}',
        })
      ).status,
    ).toBe(401)
    expect(rig.llm.requests.length).toBe(before)
    expect((await call('Bearer key-two-654321')).status).toBe(200)
  })
})
