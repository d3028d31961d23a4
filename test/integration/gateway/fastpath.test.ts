import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { GatewayModule } from '../../../src-main/gateway/module'
import { createFastPath } from '../../../src-main/http/fastPath'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { exchange, headerLines, rawCase, type RawCase } from '../../helpers/rawExchange'

/**
 * The fast path (the relayed /v1 routes dispatched before the router) against the router itself
 * (GATEWAY_FAST_PATH=off): the same 1,000 requests through each, every upstream request and every
 * answer compared byte for byte (the Date header aside), streamed and chunked bodies included.
 */

const KEY = 'lan-key-equivalence-0001'

/** What one upstream request looked like on arrival: method, path, raw headers in order, body bytes. */
interface Seen {
  readonly head: string
  readonly body: Buffer
}

interface RecordingUpstream {
  readonly port: number
  readonly seen: Map<number, Seen>
  close(): Promise<void>
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r))
const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** Bytes the upstream has written of its big stream so far (the backpressure test reads it). */
const bigStream = { written: 0, total: 64 * 1024 * 1024 }

/** Writes `bigStream.total` bytes of events as fast as the connection takes them. */
async function writeBigStream(res: http.ServerResponse): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream' })
  const event = Buffer.from(`data: ${'x'.repeat(1024 * 1024 - 8)}\n\n`)
  bigStream.written = 0
  while (bigStream.written < bigStream.total) {
    bigStream.written += event.length
    if (!res.write(event)) await new Promise((r) => res.once('drain', r))
  }
  res.end('data: [DONE]\n\n')
}

/** Answers by the body's `x_case`, so the same request gets the same answer from both upstreams. */
async function answer(c: string, id: number, res: http.ServerResponse): Promise<void> {
  if (c === 'sse-big') return writeBigStream(res)
  const event = (n: number): string => `data: ${JSON.stringify({ id, n, choices: [{ text: `tök ${n}` }] })}\n\n`
  if (c === 'json' || c === 'embed') {
    const body = JSON.stringify({ id, object: c === 'embed' ? 'list' : 'chat.completion', data: [id, 'é'] })
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
    return void res.end(body)
  }
  if (c === 'chunked') {
    res.writeHead(200, { 'content-type': 'application/json', 'x-upstream-note': 'chunked' })
    for (const part of ['{"id":', String(id), ',"pieces":["a","b"', ']}']) {
      res.write(part)
      await tick()
    }
    return void res.end()
  }
  if (c === 'sse' || c === 'sse-unasked') {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    for (let n = 0; n < 12; n++) {
      const e = event(n)
      // Events split across writes, as a real server's buffers do.
      if (n % 3 === 0) {
        res.write(e.slice(0, 7))
        await tick()
        res.write(e.slice(7))
      } else res.write(e)
      if (n % 2 === 0) await tick()
    }
    return void res.end('data: [DONE]\n\n')
  }
  if (c === 'sse-reset') {
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write(event(0) + event(1))
    await pause(30)
    return void res.destroy()
  }
  if (c === 'err-json') {
    res.writeHead(400, { 'content-type': 'application/json' })
    return void res.end(JSON.stringify({ error: { message: `model ${id} does not exist`, code: 400 } }))
  }
  res.writeHead(503, { 'content-type': 'text/plain' })
  res.end('overloaded, try later')
}

function startRecordingUpstream(): Promise<RecordingUpstream> {
  const seen = new Map<number, Seen>()
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      if (req.method !== 'POST') {
        res.writeHead(200, { 'content-type': 'application/json' })
        return void res.end('{"object":"list","data":[]}')
      }
      const port = (server.address() as AddressInfo).port
      const parsed = JSON.parse(body.toString('utf8')) as { x_id: number; x_case: string }
      const head = [`${req.method} ${req.url} HTTP/${req.httpVersion}`, ...headerLines(req.rawHeaders)]
        .join('\n')
        .replaceAll(`127.0.0.1:${port}`, 'UPSTREAM')
      seen.set(parsed.x_id, { head, body })
      void answer(parsed.x_case, parsed.x_id, res)
    })
  })
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        port: (server.address() as AddressInfo).port,
        seen,
        close: () =>
          new Promise<void>((r) => {
            server.close(() => r())
            server.closeAllConnections()
          }),
      }),
    ),
  )
}

type Case = RawCase

/** A small deterministic generator, so both runs get exactly the same mix. */
function rng(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0
    return s / 2 ** 32
  }
}

const CASES = ['json', 'json', 'chunked', 'sse', 'sse', 'sse-unasked', 'sse-reset', 'err-json', 'err-text']

function makeCases(n: number): Case[] {
  const r = rng(15)
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!
  const out: Case[] = []
  for (let id = 0; id < n; id++) {
    const roll = r()
    let path = pick(['/v1/chat/completions', '/v1/completions', '/v1/embeddings'])
    let text: string
    let key = KEY
    if (roll < 0.03)
      text = '{"model": "x", "messages": [' // malformed: 400, nothing goes upstream
    else if (roll < 0.05)
      text = '[1, 2, 3]' // not an object: 400
    else if (roll < 0.06) text = ''
    else {
      const c = path === '/v1/embeddings' ? 'embed' : pick(CASES)
      const stream = c === 'sse' || c === 'sse-reset' || c === 'err-json' ? true : c === 'err-text' ? r() < 0.5 : false
      const body = {
        x_id: id,
        x_case: c,
        model: pick(['sim/Qwen3-8B-Instruct', 'other']),
        stream,
        messages: [{ role: 'user', content: `hello ${id} ${'ü'.repeat(Math.floor(r() * 40))}` }],
        nested: { deep: [{ a: [1, 2, { b: null }] }] },
      }
      // Spacing and key order kept as sent: the upstream must receive these exact bytes.
      text = r() < 0.5 ? JSON.stringify(body) : JSON.stringify(body, null, 2)
    }
    if (roll >= 0.06 && roll < 0.07) key = 'wrong-key-' + id // 401, from its own address (no lockout)
    if (roll >= 0.07 && roll < 0.075) path += '?debug=1' // not an exact fast-path URL: the router serves it on both
    const headers = {
      'content-type': 'application/json',
      authorization: `Bearer ${key}`,
      'x-forwarded-for': `198.51.100.${id % 250}`,
    }
    out.push(rawCase(path, headers, text, r() < 0.3 && text.length > 3))
  }
  return out
}

/** What the client got back: status line, headers without Date, the de-chunked body, or how it failed. */
async function send(base: string, c: Case): Promise<string> {
  const a = await exchange(base, c)
  if (typeof a === 'string') return a
  return `${a.head}\n\n${a.cut === undefined ? a.body.toString('base64') : `CUT ${a.cut} after ${a.body.length}`}`
}

async function runAll(base: string, cases: Case[], concurrency: number): Promise<string[]> {
  const out = new Array<string>(cases.length)
  let next = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < cases.length) {
        const i = next++
        out[i] = await send(base, cases[i]!)
      }
    }),
  )
  return out
}

const logged = (side: Side): number =>
  (side.daemon.core.modules.find((m) => m.name === 'gateway') as GatewayModule).requestLog.totalCount

interface Side {
  daemon: TestDaemon
  upstream: RecordingUpstream
}

async function startSide(fastPath: 'on' | 'off'): Promise<Side> {
  const upstream = await startRecordingUpstream()
  const daemon = await startDaemon({
    env: {
      NODE1_HOST: '127.0.0.1',
      NODE1_USER: 'sim',
      LLM_PORT: String(upstream.port),
      EMBEDDINGS_URL: `http://127.0.0.1:${upstream.port}`,
      CONSUMER_API_KEYS: KEY,
      TRUSTED_PROXIES: '127.0.0.1',
      GATEWAY_FAST_PATH: fastPath,
    },
  })
  return { daemon, upstream }
}

describe('fast path and router path', () => {
  let fast: Side
  let routed: Side
  beforeAll(async () => {
    fast = await startSide('on')
    routed = await startSide('off')
  })
  afterAll(async () => {
    for (const s of [fast, routed]) {
      await s.daemon.stop()
      await s.upstream.close()
    }
  })

  it('takes the relayed routes only when the switch is on, and only exact POSTs', async () => {
    expect(createFastPath(routed.daemon.core, 0)).toBeNull()
    const fastPath = createFastPath(fast.daemon.core, 0)!
    expect(fastPath).not.toBeNull()
    // The dispatch decision on a server of its own: what the fast path does not take gets a 599 here.
    const server = http.createServer((req, res) => {
      if (!fastPath(req, res)) res.writeHead(599).end()
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const post = (p: string, auth = KEY, origin?: string): Promise<Response> =>
      fetch(url + p, {
        method: 'POST',
        headers: { authorization: `Bearer ${auth}`, ...(origin === undefined ? {} : { origin }) },
        body: JSON.stringify({ x_id: 5000, x_case: 'json', messages: [] }),
      })
    try {
      const served = await post('/v1/chat/completions', KEY, 'https://app.example')
      expect(served.status).toBe(200)
      // The edge's headers, held back for the answer's one writeHead, are on it once each.
      expect(served.headers.get('x-content-type-options')).toBe('nosniff')
      expect(served.headers.get('referrer-policy')).toBe('same-origin')
      expect(served.headers.get('access-control-allow-origin')).toBe('*')
      expect(served.headers.get('access-control-expose-headers')).toMatch(/^Retry-After, /)
      // An agent's call (no Origin): the baseline headers only.
      const agent = await post('/v1/chat/completions')
      expect(agent.status).toBe(200)
      expect(agent.headers.get('x-content-type-options')).toBe('nosniff')
      expect(agent.headers.get('access-control-allow-origin')).toBeNull()
      expect(agent.headers.get('access-control-expose-headers')).toBeNull()
      expect(((await served.json()) as { id: number }).id).toBe(5000)
      expect(fast.upstream.seen.has(5000)).toBe(true)
      // The same edge as the router: a wrong key is refused in OpenAI's shape, nothing goes upstream.
      const refused = await fetch(url + '/v1/embeddings', {
        method: 'POST',
        headers: { authorization: 'Bearer nope', 'x-forwarded-for': '203.0.113.9' },
        body: JSON.stringify({ x_id: 5001, x_case: 'embed' }),
      })
      expect(refused.status).toBe(401)
      expect(((await refused.json()) as { error: { type: string } }).error.type).toBe('authentication_error')
      expect(fast.upstream.seen.has(5001)).toBe(false)
      for (const [method, p] of [
        ['GET', '/v1/models'],
        ['POST', '/v1/chat/completions?x=1'],
        ['OPTIONS', '/v1/chat/completions'],
        ['POST', '/api/config'],
        ['POST', '/v1/audio/speech'],
      ] as const)
        expect((await fetch(url + p, { method, body: method === 'POST' ? '{}' : undefined })).status, p).toBe(599)
    } finally {
      await new Promise((r) => server.close(r))
    }
  })

  it('holds the upstream back while the client does not read, and delivers every byte once it does', async () => {
    const body = JSON.stringify({ x_id: 6000, x_case: 'sse-big', stream: true })
    const got = await new Promise<{ whileStopped: number; received: number; tail: string }>((resolve, reject) => {
      const req = http.request(fast.daemon.url + '/v1/chat/completions', {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-length': Buffer.byteLength(body) },
      })
      req.on('response', (res) => {
        res.pause()
        // The client reads nothing until the upstream has stopped writing (bounded: 100 samples).
        let last = -1
        let stable = 0
        let samples = 0
        const watch = setInterval(() => {
          samples++
          stable = bigStream.written === last && last > 0 ? stable + 1 : 0
          last = bigStream.written
          if (stable < 3 && samples < 100) return
          clearInterval(watch)
          const whileStopped = bigStream.written
          let received = 0
          let tail = ''
          res.on('data', (c: Buffer) => {
            received += c.length
            tail = (tail + c.toString('latin1')).slice(-20)
          })
          res.on('end', () => resolve({ whileStopped, received, tail }))
          res.resume()
        }, 50)
      })
      req.on('error', reject)
      req.end(body)
    })
    // Socket buffers on both sides hold a few MB; nothing like the whole 64 MB answer is buffered in Tandem.
    expect(got.whileStopped).toBeLessThan(bigStream.total / 4)
    expect(got.received).toBe(bigStream.total + 'data: [DONE]\n\n'.length)
    expect(got.tail.endsWith('data: [DONE]\n\n')).toBe(true)
  })

  it('sends the same bytes upstream and the same answers back for 1,000 requests', async () => {
    const cases = makeCases(1000)
    const loggedBefore = { fast: logged(fast), routed: logged(routed) }
    const viaFast = await runAll(fast.daemon.url, cases, 8)
    const viaRouter = await runAll(routed.daemon.url, cases, 8)
    const norm = (s: string, side: Side): string => s.replaceAll(String(side.upstream.port), 'PORT')
    let compared = 0
    for (let i = 0; i < cases.length; i++) {
      expect(norm(viaFast[i]!, fast), `answer to request ${i}`).toBe(norm(viaRouter[i]!, routed))
      const a = fast.upstream.seen.get(i)
      const b = routed.upstream.seen.get(i)
      expect(a === undefined, `request ${i} reached one upstream only`).toBe(b === undefined)
      if (a && b) {
        expect(a.head, `upstream head of request ${i}`).toBe(b.head)
        expect(a.body.equals(b.body), `upstream body of request ${i}`).toBe(true)
        // Verbatim: exactly the bytes the client sent, plus the usage request a stream gets when it
        // did not ask for usage itself (added before the closing brace; the rest untouched).
        const sent = cases[i]!.pieces.join('')
        const parsed = JSON.parse(sent) as { stream?: unknown; stream_options?: unknown }
        const asksUsage = parsed.stream === true && parsed.stream_options === undefined
        const expected = asksUsage ? sent.replace(/\}(\s*)$/, ',"stream_options":{"include_usage":true}}$1') : sent
        expect(a.body.toString('utf8')).toBe(expected)
        // Sent with its length, not chunked, and with the content type and accept of the call.
        const headLines = a.head.toLowerCase().split('\n')
        expect(headLines, `upstream head of request ${i}`).toContain(`content-length: ${a.body.length}`)
        expect(headLines).toContain('content-type: application/json')
        expect(headLines).toContain(`accept: ${parsed.stream === true ? 'text/event-stream' : 'application/json'}`)
        expect(a.head.toLowerCase()).not.toContain('transfer-encoding')
        compared++
      }
    }
    // The mix really exercised both: most requests went upstream, and every kind of answer came back.
    expect(compared).toBeGreaterThan(850)
    const statuses = new Set(viaFast.map((s) => s.slice(0, 3)))
    for (const st of ['200', '400', '401', '503']) expect(statuses).toContain(st)
    expect(viaFast.some((s) => s.includes('text/event-stream') && s.includes('Transfer-Encoding: chunked'))).toBe(true)
    const sse = viaFast.filter((s) => s.includes('text/event-stream')).map((s) => s.split('\n\n')[1]!)
    const decoded = sse.map((b) => Buffer.from(b, 'base64').toString('utf8'))
    expect(decoded.some((t) => t.endsWith('data: [DONE]\n\n'))).toBe(true)
    expect(decoded.some((t) => t.includes('event: error\ndata: '))).toBe(true)
    // Every request that passed the edge is in each daemon's request log, whichever way it was dispatched.
    const passedEdge = cases.filter((c) => c.headers.authorization === `Bearer ${KEY}`).length
    expect(logged(routed) - loggedBefore.routed).toBe(passedEdge)
    expect(logged(fast) - loggedBefore.fast).toBe(passedEdge)
  }, 120_000)
})
