import http from 'node:http'
import type { AddressInfo } from 'node:net'
import zlib from 'node:zlib'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { silenceWav } from './setup'

/**
 * Issue 33 #9: a form with two files, a gzip-compressed upload, or an asr 400 reached the client
 * as the asr's `{"detail"}` instead of OpenAI's error shape. The relay now refuses the first two
 * itself, and answers the asr's 4xx in the route's error shape with the asr's detail as message.
 */
interface OpenAiError {
  error: { message: string; type: string; code: string }
  detail: unknown
}

describe('the upload relay’s refusals and the asr’s 4xx, in the route’s error shape', () => {
  let d: TestDaemon
  /** An asr that reads each upload to its end and answers what `answer` says. */
  let answer: { status: number; body: string } = { status: 200, body: '{"text":"ok"}' }
  let received = 0
  const asr = http.createServer((req, res) => {
    received++
    req.resume()
    req.on('end', () => {
      res.writeHead(answer.status, { 'content-type': 'application/json' })
      res.end(answer.body)
    })
  })

  beforeAll(async () => {
    await new Promise<void>((r) => asr.listen(0, '127.0.0.1', r))
    d = await startDaemon({
      env: { NODE2_HOST: '127.0.0.1', NODE2_USER: 'sim', ASR_PORT: String((asr.address() as AddressInfo).port) },
    })
  })
  afterAll(async () => {
    await d?.stop()
    asr.closeAllConnections()
    await new Promise((r) => asr.close(r))
  })
  beforeEach(() => {
    answer = { status: 200, body: '{"text":"ok"}' }
  })

  const wav = (): Blob => new Blob([new Uint8Array(silenceWav(0.5))], { type: 'audio/wav' })

  async function failure(res: Response, status: number): Promise<OpenAiError> {
    expect(res.status).toBe(status)
    const body = (await res.json()) as OpenAiError
    expect(typeof body.error.message).toBe('string')
    expect(typeof body.error.type).toBe('string')
    expect(typeof body.error.code).toBe('string')
    return body
  }

  it('relays one file as before', async () => {
    const fd = new FormData()
    fd.append('model', 'asr')
    fd.append('file', wav(), 'a.wav')
    const res = await fetch(`${d.url}/v1/audio/transcriptions`, { method: 'POST', body: fd })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ text: 'ok' })
  })

  it('refuses a form with a second file with 400 in OpenAI’s shape', async () => {
    const fd = new FormData()
    fd.append('model', 'asr')
    fd.append('file', wav(), 'a.wav')
    fd.append('file', wav(), 'b.wav')
    const res = await fetch(`${d.url}/v1/audio/transcriptions`, { method: 'POST', body: fd })
    const err = await failure(res, 400)
    expect(err.error.type).toBe('invalid_request_error')
    expect(err.error.code).toBe('bad_input')
    expect(err.error.message).toMatch(/one file/)
  })

  it('refuses a compressed upload with 400 in OpenAI’s shape, before anything reaches the asr', async () => {
    const fd = new FormData()
    fd.append('model', 'asr')
    fd.append('file', wav(), 'a.wav')
    const form = new Response(fd)
    const plain = Buffer.from(await form.arrayBuffer())
    const before = received
    const res = await fetch(`${d.url}/v1/audio/transcriptions`, {
      method: 'POST',
      body: zlib.gzipSync(plain),
      headers: { 'content-type': form.headers.get('content-type')!, 'content-encoding': 'gzip' },
    })
    const err = await failure(res, 400)
    expect(err.error.type).toBe('invalid_request_error')
    expect(err.error.message).toMatch(/content-encoding gzip/i)
    expect(received).toBe(before)
  })

  it('answers the asr’s 400 in OpenAI’s shape, its detail as the message and beside it', async () => {
    answer = { status: 400, body: JSON.stringify({ detail: 'audio format not understood' }) }
    const fd = new FormData()
    fd.append('model', 'asr')
    fd.append('file', wav(), 'a.wav')
    const res = await fetch(`${d.url}/v1/audio/transcriptions`, { method: 'POST', body: fd })
    const err = await failure(res, 400)
    expect(err.error.message).toBe('audio format not understood')
    expect(err.error.type).toBe('invalid_request_error')
    expect(err.detail).toBe('audio format not understood')
  })

  it('answers the asr’s 422 in OpenAI’s shape, and its 404 with the not-found type', async () => {
    answer = { status: 422, body: JSON.stringify({ detail: [{ loc: ['body', 'file'], msg: 'field required' }] }) }
    const fd = (): FormData => {
      const f = new FormData()
      f.append('file', wav(), 'a.wav')
      return f
    }
    const unprocessable = await failure(
      await fetch(`${d.url}/v1/audio/transcriptions`, { method: 'POST', body: fd() }),
      422,
    )
    expect(unprocessable.error.message).toMatch(/field required/)
    answer = { status: 404, body: 'Not Found' }
    const missing = await failure(await fetch(`${d.url}/v1/audio/transcriptions`, { method: 'POST', body: fd() }), 404)
    expect(missing.error.type).toBe('not_found_error')
    expect(missing.error.message).toBe('Not Found')
  })

  it('answers the asr’s 4xx on /api/audio/diarize-chunk in the control shape', async () => {
    answer = { status: 400, body: JSON.stringify({ detail: 'too short to diarize' }) }
    const fd = new FormData()
    fd.append('file', wav(), 'a.wav')
    const res = await fetch(`${d.url}/api/audio/diarize-chunk`, { method: 'POST', body: fd })
    expect(res.status).toBe(400)
    expect(await res.json()).toEqual({ detail: 'too short to diarize', code: 'upstream_error' })
  })
})
