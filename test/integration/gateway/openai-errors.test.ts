import http from 'node:http'
import type { AddressInfo } from 'node:net'
import OpenAI, { APIError, toFile } from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { silenceWav, startRig, type GatewayRig } from './setup'

/**
 * Issue 8: `/v1/*` errors were `{"detail","code"}`, which the official openai client reports as
 * "400 status code (no body)". Now every error the /v1 surface writes is OpenAI's shape, so the
 * real client shows Tandem's message; plus OpenAI voice names and `response_format: "pcm"`.
 */

/** What the client threw: its status, message, `param`, and the response headers. */
async function failure(call: Promise<unknown>): Promise<APIError> {
  const err = await call.then(
    () => null,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(APIError)
  return err as APIError
}

describe('the /v1 surface through the official openai client', () => {
  let rig: GatewayRig
  let client: OpenAI

  beforeAll(async () => {
    rig = await startRig({ TTS_VOICE_ALIASES: 'echo=Multivoice.DE-DE.Lena,broken' })
    client = new OpenAI({ baseURL: `${rig.daemon.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 20_000 })
  })
  afterAll(async () => {
    await rig?.stop()
  })

  it('400: shows why the request was refused and names the field', async () => {
    const err = await failure(
      client.audio.speech.create({ model: 'tts', voice: 'alloy', input: 'hi', response_format: 'mp3' }),
    )
    expect(err.status).toBe(400)
    expect(err.message).toMatch(/^400 response_format "mp3" is not supported: use "wav" .* or "pcm"/)
    expect(err.param).toBe('response_format')
    expect(err.code).toBe('bad_input')
    expect(err.type).toBe('invalid_request_error')
  })

  it("404: shows the route that does not exist, and node1's engine's own words for a model no placement serves", async () => {
    const route = await failure(client.post('/audio/voices', { body: {} }))
    expect(route.status).toBe(404)
    expect(route.message).toBe('404 no route POST /v1/audio/voices')
    const model = await failure(
      client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] }),
    )
    // Forwarded to node1's llm as it is (spec 1, 4.9): the engine says which model it does not serve.
    expect(model.status).toBe(404)
    expect(model.message).toBe('404 The model `no-such-model` does not exist.')
  })

  it('413: shows the body limit', async () => {
    const err = await failure(
      client.audio.speech.create({ model: 'tts', voice: 'alloy', input: 'x'.repeat(1_100_000) }),
    )
    expect(err.status).toBe(413)
    expect(err.message).toMatch(/^413 request body is larger than \d+ bytes/)
  })

  it('502: shows that the llm is unreachable', async () => {
    await rig.llm.setFault('refused')
    try {
      const err = await failure(
        client.chat.completions.create({ model: 'sim/Qwen3-8B-Instruct', messages: [{ role: 'user', content: 'hi' }] }),
      )
      expect(err.status).toBe(502)
      expect(err.message).toMatch(/^502 llm on node1 is unreachable at http:\/\/127\.0\.0\.1:\d+: /)
    } finally {
      await rig.llm.setFault('none')
    }
  })

  it('503: shows the wedged asr and keeps Retry-After', async () => {
    await rig.asr.setFault({ kind: 'error500', message: 'CUFFT_INTERNAL_ERROR' })
    try {
      const err = await failure(
        client.audio.transcriptions.create({
          file: await toFile(silenceWav(1), 'a.wav', { type: 'audio/wav' }),
          model: 'asr',
        }),
      )
      expect(err.status).toBe(503)
      expect(err.message).toMatch(/^503 asr failed \(HTTP 500: CUFFT_INTERNAL_ERROR\)/)
      expect(err.headers?.get('retry-after')).toBe('60')
    } finally {
      await rig.asr.setFault('none')
    }
  })

  it('speaks with an OpenAI voice name and serves pcm as the WAV without its header', async () => {
    const wav = Buffer.from(
      await (await client.audio.speech.create({ model: 'tts', voice: 'alloy', input: 'Good morning' })).arrayBuffer(),
    )
    expect(rig.tts.requests.at(-1)!.head.toString('utf8')).toMatch(/name="voice"\r\n\r\nMultivoice\.EN-US\.Aria\r\n/)
    const res = await client.audio.speech
      .create({ model: 'tts', voice: 'alloy', input: 'Good morning', response_format: 'pcm' })
      .asResponse()
    expect(res.headers.get('content-type')).toBe('audio/pcm')
    expect(res.headers.get('x-sample-rate')).toBe('22050')
    const pcm = Buffer.from(await res.arrayBuffer())
    expect(wav.toString('latin1', 36, 40)).toBe('data')
    expect(pcm.equals(wav.subarray(44))).toBe(true)
  })

  it('takes TTS_VOICE_ALIASES, reports a malformed entry, and lists the aliases for the Gateway view', async () => {
    await client.audio.speech.create({ model: 'tts', voice: 'echo', input: 'Guten Morgen' })
    const sent = rig.tts.requests.at(-1)!.head.toString('utf8')
    expect(sent).toMatch(/name="voice"\r\n\r\nMultivoice\.DE-DE\.Lena\r\n/)
    expect(sent).toMatch(/name="language"\r\n\r\nde-DE\r\n/)
    expect(rig.daemon.logs.lines.some((l) => /TTS_VOICE_ALIASES: \\?"broken\\?".*entry skipped/.test(l))).toBe(true)
    const voices = (await (await rig.daemon.admin('/api/gateway/voices')).json()) as {
      aliases: { alias: string; voice: string; source: string }[]
    }
    expect(voices.aliases).toContainEqual({ alias: 'echo', voice: 'Multivoice.DE-DE.Lena', source: 'setting' })
    expect(voices.aliases).toContainEqual({ alias: 'alloy', voice: 'Multivoice.EN-US.Aria', source: 'default' })
    expect(voices.aliases.map((a) => a.alias)).not.toContain('broken')
  })
})

describe('the /v1 surface with consumer keys, in front of an llm that answers errors its own way', () => {
  let d: TestDaemon
  let llm: http.Server
  const KEY = 'consumer-key-0123456789abcdef'

  beforeAll(async () => {
    // vLLM's older error body: no `error` object, so the client would show no message if passed through.
    llm = http.createServer((req, res) => {
      req.resume()
      // It serves `m` (the placement learned at start), and answers every generation with an error.
      if (req.method === 'GET' && req.url === '/v1/models') return void res.end(JSON.stringify({ data: [{ id: 'm' }] }))
      req.on('end', () => {
        res.writeHead(400, { 'content-type': 'application/json' })
        res.end(
          JSON.stringify({
            object: 'error',
            message: "This model's maximum context length is 8192 tokens",
            type: 'BadRequestError',
            param: null,
            code: 400,
          }),
        )
      })
    })
    await new Promise<void>((r) => llm.listen(0, '127.0.0.1', r))
    d = await startDaemon({
      env: {
        CONSUMER_API_KEYS: KEY,
        NODE1_HOST: '127.0.0.1',
        NODE1_USER: 'sim',
        LLM_PORT: String((llm.address() as AddressInfo).port),
      },
    })
  })
  afterAll(async () => {
    await d?.stop()
    await new Promise((r) => llm?.close(r))
  })

  it('401: shows that a consumer key is required', async () => {
    const wrong = new OpenAI({ baseURL: `${d.url}/v1`, apiKey: 'not-the-key', maxRetries: 0 })
    const err = await failure(wrong.models.list())
    expect(err.status).toBe(401)
    expect(err.message).toMatch(/^401 a valid consumer API key is required/)
    expect(err.type).toBe('authentication_error')
  })

  it("400 from the upstream: shows the upstream's message", async () => {
    const client = new OpenAI({ baseURL: `${d.url}/v1`, apiKey: KEY, maxRetries: 0 })
    const err = await failure(
      client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'a very long prompt' }] }),
    )
    expect(err.status).toBe(400)
    expect(err.message).toBe("400 llm on node1 answered HTTP 400: This model's maximum context length is 8192 tokens")
  })
})
