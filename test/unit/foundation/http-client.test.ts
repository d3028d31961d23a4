import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { httpCall, HttpBodyTooLarge, HttpUnreachable } from '../../../src-main/lib/httpClient'
import { encodeMultipart, openMultipart } from '../../../src-main/gateway/audio/multipart'

/** The daemon's own HTTP client against a raw loopback server whose answers each test picks by path. */
let server: http.Server
let base = ''
const seen: { method: string; path: string; headers: http.IncomingHttpHeaders; body: Buffer }[] = []
/** Answers held open until the test lets them go (a slow head, a slow body). */
const held: http.ServerResponse[] = []

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      seen.push({ method: req.method!, path: req.url!, headers: req.headers, body: Buffer.concat(chunks) })
      answer(req.url!, res)
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  for (const res of held) res.destroy()
  server.closeAllConnections()
  await new Promise((r) => server.close(r))
})

function answer(path: string, res: http.ServerResponse): void {
  if (path === '/json') res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[{"id":"m"}]}')
  else if (path === '/echo') res.writeHead(201).end('echoed')
  else if (path === '/moved') res.writeHead(302, { location: '/json' }).end()
  else if (path === '/declared-big') res.writeHead(200, { 'content-length': '5000' }).end('x'.repeat(5000))
  else if (path === '/chunked-big') {
    res.writeHead(200)
    for (let i = 0; i < 10; i++) res.write('y'.repeat(1000))
    res.end()
  } else if (path === '/stream') {
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write('data: 1\n\n')
    res.end('data: 2\n\n')
  } else if (path === '/cut') {
    res.writeHead(200, { 'content-length': '100' })
    res.write('only part')
    setImmediate(() => res.destroy())
  } else if (path === '/slow-head' || path === '/slow-body') {
    if (path === '/slow-body') res.writeHead(200).write('first bytes')
    held.push(res)
  } else if (path === '/form') {
    res.writeHead(200).end()
  } else res.writeHead(404).end('no such thing')
}

const timeout = (): AbortSignal => AbortSignal.timeout(5000)

describe('httpCall', () => {
  it('reads an answer as JSON, with its status and headers', async () => {
    const res = await httpCall(`${base}/json`, { signal: timeout() })
    expect([res.status, res.ok, res.headers['content-type']]).toEqual([200, true, 'application/json'])
    expect(await res.json()).toEqual({ data: [{ id: 'm' }] })
  })

  it('names itself unless the caller names its own user agent', async () => {
    ;(await httpCall(`${base}/json`, { signal: timeout() })).discard()
    ;(await httpCall(`${base}/json`, { headers: { 'User-Agent': 'Tandem-Webhooks/1' }, signal: timeout() })).discard()
    const [own, given] = seen.filter((r) => r.path === '/json').slice(-2)
    expect(own!.headers['user-agent']).toMatch(/^Tandem\/\d+\.\d+\.\d+$/)
    expect(given!.headers['user-agent']).toBe('Tandem-Webhooks/1')
  })

  it('sends a string, a Buffer or a stream as the body, with its length when it has one', async () => {
    for (const body of [
      'text body',
      Buffer.from('buffer body'),
      Readable.from([Buffer.from('streamed '), Buffer.from('body')]),
    ]) {
      const res = await httpCall(`${base}/echo`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body,
        signal: timeout(),
      })
      expect([res.status, await res.text()]).toEqual([201, 'echoed'])
    }
    const [text, buffer, stream] = seen.filter((r) => r.path === '/echo').slice(-3)
    expect([text!.body.toString(), text!.headers['content-length']]).toEqual(['text body', '9'])
    expect([buffer!.body.toString(), buffer!.headers['content-length']]).toEqual(['buffer body', '11'])
    expect([stream!.body.toString(), stream!.headers['transfer-encoding']]).toEqual(['streamed body', 'chunked'])
  })

  it('does not follow a redirect: a 3xx is the answer', async () => {
    const res = await httpCall(`${base}/moved`, { signal: timeout() })
    expect([res.status, res.ok, res.headers.location]).toEqual([302, false, '/json'])
    res.discard()
  })

  it('refuses a body over the limit, declared or not', async () => {
    const declared = await httpCall(`${base}/declared-big`, { signal: timeout() })
    await expect(declared.bytes(4096)).rejects.toBeInstanceOf(HttpBodyTooLarge)
    const chunked = await httpCall(`${base}/chunked-big`, { signal: timeout() })
    await expect(chunked.text(4096)).rejects.toThrow(/over 4096 bytes/)
    const fits = await httpCall(`${base}/chunked-big`, { signal: timeout() })
    expect((await fits.bytes(10_000)).length).toBe(10_000)
  })

  it('hands the body over as it arrives', async () => {
    const res = await httpCall(`${base}/stream`, { signal: timeout() })
    let text = ''
    for await (const c of res.body) text += c.toString()
    expect(text).toBe('data: 1\n\ndata: 2\n\n')
  })

  it('says when nothing answers, with the system code', async () => {
    const closed = http.createServer()
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r))
    const port = (closed.address() as AddressInfo).port
    await new Promise((r) => closed.close(r))
    const err = await httpCall(`http://127.0.0.1:${port}/`, { signal: timeout() }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(HttpUnreachable)
    expect((err as HttpUnreachable).code).toBe('ECONNREFUSED')
  })

  it('refuses a URL that is not http(s) or holds credentials, and a signal already aborted, without sending anything', async () => {
    const before = seen.length
    await expect(httpCall('file:///etc/passwd', { signal: timeout() })).rejects.toThrow(/not an http\(s\) URL/)
    const withCredentials = `${base.replace('http://', 'http://user:secret@')}/json`
    await expect(httpCall(withCredentials, { signal: timeout() })).rejects.toThrow(
      'a URL with credentials in it is not called',
    )
    await expect(httpCall(`${base}/json`, { signal: AbortSignal.abort(new Error('gone')) })).rejects.toThrow('gone')
    expect(seen.length).toBe(before)
  })

  it('ends with the deadline, before the head and while the body is read', async () => {
    const head = await httpCall(`${base}/slow-head`, { signal: AbortSignal.timeout(100) }).catch((e: unknown) => e)
    expect((head as Error).name).toBe('TimeoutError')
    const res = await httpCall(`${base}/slow-body`, { signal: AbortSignal.timeout(200) })
    const body = await res.text().catch((e: unknown) => e)
    expect((body as Error).name).toBe('TimeoutError')
  })

  it('refuses to read a body its deadline ended before the read began, or one read already, instead of waiting for ever', async () => {
    const signal = AbortSignal.timeout(100)
    const res = await httpCall(`${base}/slow-body`, { signal })
    await new Promise((r) => signal.addEventListener('abort', r))
    await new Promise((r) => setImmediate(r))
    const late = await res.text().catch((e: unknown) => e)
    expect((late as Error).name).toBe('TimeoutError')
    const once = await httpCall(`${base}/json`, { signal: timeout() })
    await once.json()
    await expect(once.text()).rejects.toThrow(/already read/)
  })

  it('says when the connection closes mid-answer', async () => {
    const res = await httpCall(`${base}/cut`, { signal: timeout() })
    await expect(res.text()).rejects.toThrow(/closed mid-answer|aborted/)
  })

  it('sends a multipart form with an in-memory file that a form parser reads back', async () => {
    const wav = Buffer.from([0x52, 0x49, 0x46, 0x46, 0, 1, 2, 3, 0xff])
    const form = encodeMultipart([['response_format', 'json']], {
      field: 'file',
      filename: 'probe.wav',
      contentType: 'audio/wav',
      bytes: wav,
    })
    const res = await httpCall(`${base}/form`, {
      method: 'POST',
      headers: { 'content-type': form.contentType, 'content-length': form.length },
      body: form.body,
      signal: timeout(),
    })
    res.discard()
    const sent = seen.filter((r) => r.path === '/form').at(-1)!
    expect(sent.body.length).toBe(form.length)
    const parts: Record<string, Buffer | string> = {}
    const bb = openMultipart(sent.headers, { fileSize: 1024, files: 1, fields: 4, fieldSize: 1024, parts: 5 })
    bb.on('field', (name: string, value: string) => (parts[name] = value))
    bb.on('file', (name: string, stream: Readable) => {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => (parts[name] = Buffer.concat(chunks)))
    })
    await new Promise((r) => {
      bb.on('close', r)
      bb.end(sent.body)
    })
    expect(parts).toEqual({ response_format: 'json', file: wav })
  })
})
