import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src-main/config/load'
import { createCore, type Core } from '../../../src-main/compose'
import { createLogger, MemorySink, Redactor } from '../../../src-main/lib/logger'
import { startHttpServer, type RunningServer } from '../../../src-main/http/listen'
import { startFakeAsr, startFakeLlm, type FakeAsr, type FakeLlm } from '../../sim/http'
import { silenceWav, waitFor } from '../gateway/setup'

/** A raw connection to the daemon that records what comes back and when it is closed. */
interface RawConn {
  readonly socket: net.Socket
  received(): string
  closed(): boolean
}

async function connect(port: number, host = '127.0.0.1'): Promise<RawConn> {
  const socket = net.connect(port, host)
  let received = ''
  let closed = false
  socket.on('data', (c: Buffer) => (received += c.toString('latin1')))
  socket.on('error', () => undefined)
  socket.once('close', () => (closed = true))
  await new Promise<void>((resolve) => {
    socket.once('connect', () => resolve())
    socket.once('close', () => resolve())
  })
  return { socket, received: () => received, closed: () => closed }
}

/** Whether this machine has IPv6 loopback (some containers have none). */
const ipv6Loopback = await new Promise<boolean>((resolve) => {
  const probe = net.createServer()
  probe.once('error', () => resolve(false))
  probe.listen(0, '::1', () => probe.close(() => resolve(true)))
})

/** Server-level limits, with small values passed through startHttpServer's options. */
describe('HTTP server limits', () => {
  let core: Core
  let http: RunningServer
  let asr: FakeAsr
  let llm: FakeLlm
  let port: number
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-limits-'))

  beforeAll(async () => {
    asr = await startFakeAsr()
    llm = await startFakeLlm()
    const config = loadConfig({
      env: {
        DATA_DIR: dataDir,
        PORT: '0',
        BIND: '127.0.0.1',
        RATE_SOURCES: 'http://127.0.0.1:9',
        NODE2_HOST: '127.0.0.1',
        NODE2_USER: 'sim',
        ASR_PORT: String(asr.port),
        NODE1_HOST: '127.0.0.1',
        NODE1_USER: 'sim',
        LLM_PORT: String(llm.port),
      },
    })
    core = await createCore({ config, logger: createLogger({ redactor: new Redactor(), sink: new MemorySink() }) })
    await core.start()
    http = await startHttpServer(
      core,
      { port: 0, host: '127.0.0.1' },
      { rendererDir: null, limits: { bodyTimeoutMs: 250, connectionsPerAddress: 3 } },
    )
    port = http.port
  })
  afterAll(async () => {
    await http?.close()
    await core?.stop()
    await asr?.close()
    await llm?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('reaps a half-sent JSON body with 408 and closes the connection', async () => {
    // Contract calls on the fast path (/scrub, /v1/validate) and through the router (?q) alike.
    for (const target of ['/scrub', '/v1/validate', '/scrub?from=test']) {
      const c = await connect(port)
      c.socket.write(
        `POST ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://app.example\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"text": "hal`,
      )
      await waitFor(() => c.closed(), 10_000)
      const got = c.received()
      expect(got, target).toMatch(/^HTTP\/1\.1 408 /)
      expect(got, target).toMatch(/\r\nX-Content-Type-Options: nosniff\r\n/i)
      expect(got, target).toMatch(/\r\nAccess-Control-Allow-Origin: \*\r\n/i)
    }
  })

  it('reaps a half-sent chat body on the fast path with 408 in OpenAI shape, with the edge headers', async () => {
    const before = llm.requests.length
    const c = await connect(port)
    c.socket.write(
      'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://app.example\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"model": "x',
    )
    await waitFor(() => c.closed(), 10_000)
    const got = c.received()
    expect(got).toMatch(/^HTTP\/1\.1 408 /)
    expect(got).toMatch(/\r\nX-Content-Type-Options: nosniff\r\n/i)
    expect(got).toMatch(/\r\nAccess-Control-Allow-Origin: \*\r\n/i)
    expect(got).toMatch(/\r\nConnection: close\r\n/i)
    // The OpenAI clients read `error.message`: the same shape as every other /v1 error.
    expect(JSON.parse(got.slice(got.indexOf('\r\n\r\n') + 4))).toMatchObject({
      error: { type: 'invalid_request_error', code: 'request_timeout' },
    })
    expect(llm.requests.length).toBe(before)
  })

  it('lets a body that ends in time go on, and keeps its connection past the deadline', async () => {
    const body = '{"text": "hello there"}'
    const request = (part: string): string =>
      `POST /scrub HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${part}`
    const c = await connect(port)
    c.socket.write(request(body.slice(0, 8)))
    await new Promise((r) => setTimeout(r, 100))
    c.socket.write(body.slice(8))
    // The whole answer: a JSON body, last.
    await waitFor(() => /^HTTP\/1\.1 200 [\s\S]*\}$/.test(c.received()), 10_000)
    // Twice the deadline later, the finished body's timer has not answered again nor closed the connection.
    const answered = c.received().length
    await new Promise((r) => setTimeout(r, 500))
    expect(c.closed()).toBe(false)
    expect(c.received().length).toBe(answered)
    c.socket.write(request(body))
    await waitFor(() => c.received().length > answered, 10_000)
    expect(c.received().slice(answered)).toMatch(/^HTTP\/1\.1 200 /)
    c.socket.destroy()
  })

  it('lets an upload route take longer than the body deadline while bytes keep coming', async () => {
    const boundary = 'limits-boundary'
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`,
    )
    const body = Buffer.concat([head, silenceWav(1), Buffer.from(`\r\n--${boundary}--\r\n`)])
    const c = await connect(port)
    c.socket.write(
      `POST /v1/audio/transcriptions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n` +
        `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${body.length}\r\n\r\n`,
    )
    const half = Math.floor(body.length / 2)
    c.socket.write(body.subarray(0, half))
    // Past the body deadline of ordinary requests, the rest arrives.
    await new Promise((r) => setTimeout(r, 600))
    c.socket.write(body.subarray(half))
    await waitFor(() => c.closed(), 10_000)
    expect(c.received()).toMatch(/^HTTP\/1\.1 200 /)
  })

  it('closes a connection beyond the per-address limit at once, and accepts again when one ends', async () => {
    const held = [await connect(port), await connect(port), await connect(port)]
    const extra = await connect(port)
    await waitFor(() => extra.closed())
    expect(extra.received()).toBe('')
    // The connections within the limit still work.
    held[0]!.socket.write('GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
    await waitFor(() => held[0]!.received().includes('\r\n\r\n'))
    expect(held[0]!.received()).toMatch(/^HTTP\/1\.1 200 /)
    expect(held.some((h) => h.closed())).toBe(false)

    held[1]!.socket.destroy()
    // The slot is free once the server has seen the close; a bounded number of tries.
    let again: RawConn | null = null
    for (let i = 0; i < 50 && again === null; i++) {
      const c = await connect(port)
      c.socket.write('GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
      await waitFor(() => c.closed() || c.received().includes('\r\n\r\n'))
      if (!c.closed()) again = c
    }
    expect(again?.received()).toMatch(/^HTTP\/1\.1 200 /)
    for (const c of [...held, again]) c?.socket.destroy()
  })

  it('closes a connection that sends nothing at the header timeout', async () => {
    const quick = await startHttpServer(
      core,
      { port: 0, host: '127.0.0.1' },
      { rendererDir: null, limits: { headersTimeoutMs: 300 } },
    )
    try {
      const silent = await connect(quick.port)
      await waitFor(() => silent.closed(), 10_000)
      // Node answers 408 (or just closes) once the headers are late; never a request served.
      expect(silent.received()).toMatch(/^$|^HTTP\/1\.1 408 /)
    } finally {
      await quick.close()
    }
  })

  // Two hosts of one /64 cannot be made on loopback, so the peer address is rewritten as each
  // connection arrives (before the cap sees it): real sockets over ::1, two LAN addresses.
  it.skipIf(!ipv6Loopback)(
    'caps IPv6 connections per host, so one device at the cap leaves its /64 neighbours in (needs IPv6 loopback)',
    async () => {
      const v6 = await startHttpServer(
        core,
        { port: 0, host: '::1' },
        { rendererDir: null, limits: { connectionsPerAddress: 2 } },
      )
      const peers: string[] = []
      v6.server.prependListener('connection', (socket: net.Socket) => {
        Object.defineProperty(socket, 'remoteAddress', { value: peers.shift() ?? '::1' })
      })
      const open = async (peer: string): Promise<RawConn> => {
        peers.push(peer)
        return connect(v6.port, '::1')
      }
      try {
        const hog = [await open('2001:db8:1:2::a'), await open('2001:db8:1:2::a')]
        const hogExtra = await open('2001:db8:1:2::a')
        await waitFor(() => hogExtra.closed())
        const neighbour = await open('2001:db8:1:2::b')
        neighbour.socket.write('GET /api/health HTTP/1.1\r\nHost: [::1]\r\n\r\n')
        await waitFor(() => neighbour.closed() || neighbour.received().includes('\r\n\r\n'))
        expect(neighbour.closed()).toBe(false)
        expect(neighbour.received()).toMatch(/^HTTP\/1\.1 200 /)
        expect(hog.some((h) => h.closed())).toBe(false)
        for (const c of [...hog, neighbour]) c.socket.destroy()
      } finally {
        await v6.close()
      }
    },
  )
})
