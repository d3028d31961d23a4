import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { silenceWav, startRig, type GatewayRig } from '../integration/gateway/setup'

/**
 * Issue 42 #3: a key restricted to one model reached the others — embeddings without `model` or
 * with a non-string one, speech naming any voice, transcriptions naming any model or none, and
 * both /api/audio/* routes. Every route a key can reach now holds to its list; a key that lists
 * the service's model is served, and a key without a list is unaffected.
 */
const CHAT_MODEL = 'sim/Qwen3-8B-Instruct'
const ASR_MODEL = 'sim/parakeet-tdt-0.6b'
const VOICE = 'Multivoice.EN-US.Aria'

let rig: GatewayRig
let only: string
let everything: string
let open: string

async function createKey(body: Record<string, unknown>): Promise<string> {
  const res = await rig.daemon.admin('/api/consumer-keys', { method: 'POST', body: JSON.stringify(body) })
  expect(res.status).toBe(200)
  return ((await res.json()) as { secret: string }).secret
}

const json = (path: string, secret: string, body: unknown): Promise<Response> =>
  fetch(rig.daemon.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
    body: JSON.stringify(body),
  })

function upload(path: string, secret: string, model?: string): Promise<Response> {
  const form = new FormData()
  form.append('file', new Blob([silenceWav(1)], { type: 'audio/wav' }), 'a.wav')
  if (model !== undefined) form.append('model', model)
  return fetch(rig.daemon.url + path, { method: 'POST', headers: { authorization: `Bearer ${secret}` }, body: form })
}

/** Every route a key can name a model on, each way the issue found through. */
const attempts: readonly { label: string; send: (secret: string) => Promise<Response> }[] = [
  {
    label: 'chat naming another model',
    send: (s) => json('/v1/chat/completions', s, { model: 'sim/other', messages: [] }),
  },
  {
    label: 'completions naming another model',
    send: (s) => json('/v1/completions', s, { model: 'sim/other', prompt: 'x' }),
  },
  { label: 'embeddings without model', send: (s) => json('/v1/embeddings', s, { input: 'hello' }) },
  {
    label: 'embeddings with model ["sim-embed"]',
    send: (s) => json('/v1/embeddings', s, { model: ['sim-embed'], input: 'x' }),
  },
  { label: 'embeddings with model {}', send: (s) => json('/v1/embeddings', s, { model: {}, input: 'x' }) },
  {
    label: 'speech naming a voice id',
    send: (s) => json('/v1/audio/speech', s, { model: CHAT_MODEL, input: 'hi', voice: VOICE }),
  },
  { label: 'speech naming an OpenAI voice', send: (s) => json('/v1/audio/speech', s, { input: 'hi', voice: 'alloy' }) },
  { label: 'transcriptions naming a model', send: (s) => upload('/v1/audio/transcriptions', s, 'whisper-1') },
  { label: 'transcriptions naming the allowed model', send: (s) => upload('/v1/audio/transcriptions', s, CHAT_MODEL) },
  { label: 'transcriptions naming none', send: (s) => upload('/v1/audio/transcriptions', s) },
  { label: '/api/audio/transcribe-with-speakers', send: (s) => upload('/api/audio/transcribe-with-speakers', s) },
  { label: '/api/audio/diarize-chunk', send: (s) => upload('/api/audio/diarize-chunk', s) },
]

beforeAll(async () => {
  rig = await startRig()
  only = await createKey({ name: 'chat only', models: [CHAT_MODEL] })
  everything = await createKey({ name: 'all of it', models: [CHAT_MODEL, ASR_MODEL, VOICE, 'sim-embed', 'sim/other'] })
  open = await createKey({ name: 'no list' })
})
afterAll(() => rig?.stop())

describe("a key's models hold on every endpoint (issue 42)", { timeout: 60_000 }, () => {
  it('refuses each way past the list with 403 naming the key, and sends nothing upstream', async () => {
    const before = { asr: rig.asr.requests.length, tts: rig.tts.requests.length }
    const served: string[] = []
    for (const a of attempts) {
      const res = await a.send(only)
      const text = await res.text()
      if (res.status !== 403) served.push(`${a.label}: ${res.status} ${text.slice(0, 120)}`)
      else expect(text, a.label).toMatch(/key 'chat only' may/)
    }
    expect(served).toEqual([])
    // Only model and voice lists were asked for; no transcription or synthesis ran.
    const calls = (xs: readonly { path?: string; url?: string }[]): string[] =>
      xs.map((r) => r.path ?? r.url ?? '').filter((p) => !/\/v1\/(models|voices)$|\/health$/.test(p))
    expect(calls(rig.asr.requests.slice(before.asr))).toEqual([])
    expect(calls(rig.tts.requests.slice(before.tts))).toEqual([])
  })

  it('still serves the allowed model, with or without naming it', async () => {
    const chat = await json('/v1/chat/completions', only, {
      model: CHAT_MODEL,
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(chat.status).toBe(200)
    // No model: the router's default placement serves it, and the key lists that placement's model.
    const unnamed = await json('/v1/chat/completions', only, { messages: [{ role: 'user', content: 'hi' }] })
    expect(unnamed.status).toBe(200)
  })

  it('serves a key that lists each service’s model, and a key with no list at all', async () => {
    const ok = [
      (s: string) => json('/v1/embeddings', s, { model: 'sim-embed', input: 'hello' }),
      (s: string) => json('/v1/audio/speech', s, { input: 'hi', voice: VOICE }),
      (s: string) => upload('/v1/audio/transcriptions', s, 'whisper-1'),
      (s: string) => upload('/api/audio/transcribe-with-speakers', s),
    ]
    for (const secret of [everything, open])
      for (const send of ok) {
        const res = await send(secret)
        expect(res.status, await res.text()).toBe(200)
      }
    // A key without a list may name no model at all.
    expect((await json('/v1/embeddings', open, { input: 'hello' })).status).toBe(200)
  })
})
