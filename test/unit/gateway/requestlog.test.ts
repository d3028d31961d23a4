import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { RequestLog } from '../../../src-main/gateway/relay/requestLog'

/** The request log's exchange on a real loopback server: what it records, and what it leaves alone. */
describe('request log exchange', () => {
  let server: http.Server | null = null
  afterEach(async () => {
    if (server) await new Promise((r) => server!.close(r))
    server = null
  })

  async function serve(handler: http.RequestListener): Promise<string> {
    server = http.createServer(handler)
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r))
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  }

  it('leaves res.writeHead as Node made it', async () => {
    const log = new RequestLog(new ManualClock(), 10)
    let untouched: boolean | null = null
    const url = await serve((req, res) => {
      log.watch(req, res, '/v1/x')
      untouched = res.writeHead === http.ServerResponse.prototype.writeHead && !Object.hasOwn(res, 'writeHead')
      res.writeHead(200).end('ok')
    })
    await (await fetch(url, { method: 'POST', body: '{}' })).text()
    expect(untouched).toBe(true)
  })

  it('records a stream with the time its headers went out, and a whole answer with its end', async () => {
    const log = new RequestLog(new ManualClock(), 10)
    let release: () => void = () => undefined
    const url = await serve((req, res) => {
      const ex = log.watch(req, res, req.url!)
      if (req.url === '/stream') {
        ex.markStreamed()
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        res.flushHeaders()
        ex.markHeaders()
        // The body follows only once the client has seen the headers.
        release = () => res.end('data: [DONE]\n\n')
      } else res.writeHead(201, { 'content-length': 2 }).end('ok')
    })
    const streamed = await fetch(url + '/stream')
    release()
    expect(await streamed.text()).toBe('data: [DONE]\n\n')
    await (await fetch(url + '/whole')).text()
    for (let i = 0; i < 500 && log.totalCount < 2; i++) await new Promise((r) => setTimeout(r, 10))
    const [whole, stream] = log.list(10)
    expect(stream).toMatchObject({ path: '/stream', status: 200, streamed: true, aborted: false })
    expect(stream!.ttfb_ms).not.toBeNull()
    expect(stream!.ttfb_ms!).toBeLessThan(stream!.latency_ms)
    expect(whole).toMatchObject({ path: '/whole', status: 201, streamed: false, ttfb_ms: whole!.latency_ms })
    expect(whole!.bytes).toBeGreaterThan(2)
  })

  it('records a client that left before any answer as 499 with no first byte', async () => {
    const log = new RequestLog(new ManualClock(), 10)
    let arrived: () => void = () => undefined
    const seen = new Promise<void>((r) => (arrived = r))
    const url = await serve((req, res) => {
      log.watch(req, res, '/v1/chat/completions')
      arrived()
    })
    const ac = new AbortController()
    const pending = fetch(url, { method: 'POST', body: '{}', signal: ac.signal }).catch(() => null)
    await seen
    ac.abort()
    await pending
    for (let i = 0; i < 500 && log.totalCount === 0; i++) await new Promise((r) => setTimeout(r, 10))
    expect(log.list(1)[0]).toMatchObject({ status: 499, ttfb_ms: null, aborted: true })
  })
})
