import http from 'node:http'
import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { Pool } from 'undici'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { systemClock } from '../../../src-main/lib/clock'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { relayRoute } from '../../../src-main/gateway/relay/proxy'
import { RequestLog } from '../../../src-main/gateway/relay/requestLog'
import type { Upstream } from '../../../src-main/gateway/relay/upstreams'
import { readSse } from '../../helpers/daemon'
import { waitFor } from './setup'
import { BodyBudget, bodyBudgetLimits } from '../../../src-main/gateway/relay/bodyBudget'
import { RelayBodyParser } from '../../../src-main/gateway/relay/relayBodyParser'
import { GATEWAY_JSON_DEPTH } from '../../../src-main/gateway/relay/wire'

/**
 * Upstream answers no engine should send, and faults on either side, against a raw loopback
 * socket that writes each answer byte for byte: the relay must fail cleanly, never hang or guess.
 */
type Script = (socket: net.Socket) => void

describe('relay against a misbehaving upstream', () => {
  let upstream: net.Server
  let script: Script = () => undefined
  /** The upstream's sockets that have closed, counted to see an aborted call reach it. */
  let closedSockets = 0
  let server: http.Server
  let url: string
  let pool: Pool
  const log = new RequestLog(systemClock)

  beforeAll(async () => {
    upstream = net.createServer((socket) => {
      socket.once('close', () => closedSockets++)
      let head = ''
      const onData = (c: Buffer): void => {
        head += c.toString('latin1')
        const end = head.indexOf('\r\n\r\n')
        if (end === -1) return
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0)
        if (head.length - end - 4 < length) return
        socket.off('data', onData)
        script(socket)
      }
      socket.on('data', onData)
    })
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r))
    const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`
    // One connection: a call that is not released would hold up the next.
    pool = new Pool(base, { connections: 1, headersTimeout: 300, bodyTimeout: 300 })
    const up: Upstream = { name: 'llm', label: 'llm', base, basePath: '', pool }
    const relay = relayRoute(
      {
        need: () => up,
        log,
        logger: createLogger({ sink: new MemorySink() }),
        timeoutMs: 60_000,
        bodyLimit: 1 << 20,
        bodyBudget: new BodyBudget(bodyBudgetLimits(64 << 20)),
        bodyIdleMs: 10_000,
        parser: new RelayBodyParser({ maxDepth: GATEWAY_JSON_DEPTH, timeoutMs: 60_000 }),
        drainMs: 1000,
      },
      { path: '/v1/chat/completions', upstream: 'llm', upstreamPath: () => '/v1/chat/completions' },
    )
    server = http.createServer(relay)
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterEach(() => {
    script = () => undefined
  })
  afterAll(async () => {
    await pool.destroy()
    server.closeAllConnections()
    await new Promise((r) => server.close(r))
    await new Promise((r) => upstream.close(r))
  })

  const chat = (stream: boolean, signal?: AbortSignal): Promise<Response> =>
    fetch(url, {
      method: 'POST',
      body: JSON.stringify({ model: 'm', stream, messages: [{ role: 'user', content: 'hi' }] }),
      signal,
    })
  const sseHead = 'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n'
  const chunk = (text: string): string => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`

  it('refuses an answer with both Content-Length and Transfer-Encoding with 502', async () => {
    script = (s) =>
      s.end(
        'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n' +
          'Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n',
      )
    const res = await chat(false)
    expect(res.status).toBe(502)
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/llm sent a malformed/)
  })

  it('relays an HTTP/1.0 answer framed by the connection’s end, byte for byte', async () => {
    const body = '{"id":"c1", "choices":[{"message":{"content":"hé"}}]}'
    script = (s) => s.end(`HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n${body}`)
    const res = await chat(false)
    expect(res.status).toBe(200)
    expect(await res.text()).toBe(body)
  })

  it('answers 504 when the upstream starts its head and then stalls', async () => {
    script = (s) => s.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n')
    const t0 = performance.now()
    const res = await chat(false)
    expect(res.status).toBe(504)
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/no answer head in time/)
    expect(performance.now() - t0).toBeLessThan(10_000)
  })

  it('ends a stream that stalls mid-body with one SSE error event after what came', async () => {
    script = (s) => s.write(sseHead + chunk('data: {"choices":[{"delta":{"content":"a"}}]}\n\n'))
    const res = await chat(true)
    expect(res.status).toBe(200)
    const events = await readSse(res)
    expect(events.map((e) => e.event ?? 'message')).toEqual(['message', 'error'])
    expect(JSON.parse(events[1]!.data)).toMatchObject({ error: { message: 'llm stopped sending mid-answer' } })
  })

  it('counts usage from stream events whose JSON has spaces after the colons', async () => {
    const events = [
      'data: {"id": "c1", "choices": [{"delta": {"content": "one"}}]}\n\n',
      'data: {"id": "c1", "choices": [{"delta": {"content": " two"}}]}\n\n',
      'data: {"id": "c1", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 2}}\n\n',
      'data: [DONE]\n\n',
    ]
    script = (s) => s.end(sseHead + events.map(chunk).join('') + '0\r\n\r\n')
    const res = await chat(true)
    const text = await res.text()
    // Tandem asked for the usage event itself: the client does not see it.
    expect(text).toBe(events[0]! + events[1]! + events[3]!)
    await waitFor(() => log.list(1)[0]?.completion_tokens === 2)
    expect(log.list(1)[0]).toMatchObject({ prompt_tokens: 9, completion_tokens: 2, tokens_estimated: false })
    // Without a usage event the text events are counted, and the first one timed.
    const seq = log.list(1)[0]!.seq
    script = (s) => s.end(sseHead + [events[0]!, events[1]!, events[3]!].map(chunk).join('') + '0\r\n\r\n')
    await (await chat(true)).text()
    await waitFor(() => (log.list(1)[0]?.seq ?? 0) > seq)
    expect(log.list(1)[0]).toMatchObject({ completion_tokens: 2, tokens_estimated: true })
    expect(log.list(1)[0]!.ttft_ms).not.toBeNull()
  })

  it('aborts the upstream call when the client leaves mid-stream, and frees its connection', async () => {
    const closedBefore = closedSockets
    script = (s) => s.write(sseHead + chunk('data: {"choices":[{"delta":{"content":"a"}}]}\n\n'))
    const ac = new AbortController()
    const res = await chat(true, ac.signal)
    const reader = res.body!.getReader()
    await reader.read()
    ac.abort()
    await waitFor(() => closedSockets > closedBefore)
    await waitFor(() => pool.stats.running === 0)
    // The pool's one connection is free again: the next call goes through.
    script = (s) => s.end('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}')
    const next = await chat(false)
    expect([next.status, await next.text()]).toEqual([200, '{}'])
  })
})
