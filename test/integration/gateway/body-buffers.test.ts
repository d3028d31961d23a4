import { createHash } from 'node:crypto'
import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { ServiceDirectory } from '../../../src-main/cluster/serviceDirectory'
import { loadConfig } from '../../../src-main/config/load'
import { BodyBudget, bodyBudgetLimits } from '../../../src-main/gateway/relay/bodyBudget'
import { relayRoute } from '../../../src-main/gateway/relay/proxy'
import { INLINE_PARSE_BYTES, RelayBodyParser } from '../../../src-main/gateway/relay/relayBodyParser'
import { RequestLog } from '../../../src-main/gateway/relay/requestLog'
import { Upstreams } from '../../../src-main/gateway/relay/upstreams'
import { GATEWAY_JSON_DEPTH } from '../../../src-main/gateway/relay/wire'
import { systemClock } from '../../../src-main/lib/clock'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'

/**
 * Issue 42, item 5: a large body's buffer is reused by the next large body once its call has
 * ended with the whole answer (fresh memory is what a 60 MB body cost the process), and the bytes
 * that go upstream are still exactly the client's, for a shorter body in a longer buffer too. A
 * call cut short gives its buffer up.
 */
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex')

function body(size: number, fill: string): Buffer {
  const head = Buffer.from(`{"model":"m","messages":[{"role":"user","content":"`)
  const tail = Buffer.from('"}]}')
  const b = Buffer.alloc(size, fill)
  head.copy(b, 0)
  tail.copy(b, size - tail.length)
  return b
}

describe('large body buffers reused across relayed calls', () => {
  const received: string[] = []
  let status = 200
  let upstream: http.Server
  let server: http.Server
  let url: string
  let upstreams: Upstreams
  const budget = new BodyBudget(bodyBudgetLimits(64 << 20))
  const parser = new RelayBodyParser({ maxDepth: GATEWAY_JSON_DEPTH, timeoutMs: 60_000 })
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-buffers-'))

  beforeAll(async () => {
    upstream = http.createServer((req, res) => {
      const parts: Buffer[] = []
      req.on('data', (c: Buffer) => parts.push(c))
      req.on('end', () => {
        received.push(sha(Buffer.concat(parts)))
        if (status === 0) return void req.socket.destroy()
        res.writeHead(status, { 'content-type': 'application/json' }).end('{"id":"c","choices":[]}')
      })
    })
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r))
    const port = (upstream.address() as AddressInfo).port
    const config = loadConfig({
      env: { DATA_DIR: dataDir, NODE1_HOST: '127.0.0.1', NODE1_USER: 'x', LLM_PORT: String(port) },
    })
    upstreams = new Upstreams(new ServiceDirectory(config))
    const relay = relayRoute(
      {
        need: () => upstreams.get('llm')!,
        log: new RequestLog(systemClock),
        logger: createLogger({ sink: new MemorySink() }),
        timeoutMs: 30_000,
        bodyLimit: 16 << 20,
        bodyBudget: budget,
        bodyIdleMs: 10_000,
        parser,
        drainMs: 1000,
      },
      { path: '/v1/chat/completions', upstream: 'llm', upstreamPath: () => '/v1/chat/completions' },
    )
    server = http.createServer(relay)
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`
  })
  afterAll(async () => {
    parser.close()
    upstreams.destroy()
    await new Promise((r) => server.close(r))
    await new Promise((r) => upstream.close(r))
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  const send = async (b: Buffer): Promise<number> => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: b })
    await res.arrayBuffer()
    return res.status
  }

  it('reads a large body off the event loop and sends it upstream byte for byte', async () => {
    budget.buffers.dropIdle()
    // Varied bytes, so a byte moved or changed on the way (the toucher, a chunk freed early) shows.
    const big = body(5 << 20, 'abcdefghijklmnopqrstuvwxyz0123456789 .,;')
    const parse = vi.spyOn(JSON, 'parse')
    try {
      expect(await send(big)).toBe(200)
      // The depth scan and JSON.parse of the whole body run in the parser's worker: on the main
      // thread JSON.parse never sees a text as long as the body.
      const longest = Math.max(0, ...parse.mock.calls.map(([text]) => text.length))
      expect(longest).toBeLessThanOrEqual(INLINE_PARSE_BYTES)
    } finally {
      parse.mockRestore()
    }
    expect(received.at(-1)).toBe(sha(big))
    expect(budget.inUse).toBe(0)
    budget.buffers.dropIdle()
  })

  it('lends the buffer of a call that ended to the next large body, which goes upstream byte for byte', async () => {
    const first = body(4 << 20, 'a')
    expect(await send(first)).toBe(200)
    expect(received.at(-1)).toBe(sha(first))
    expect(budget.buffers.held).toBe(4 << 20)
    // A shorter body in the longer buffer: only its own bytes go upstream.
    const second = body(3 << 20, 'b')
    expect(await send(second)).toBe(200)
    expect(received.at(-1)).toBe(sha(second))
    expect(budget.buffers.held).toBe(4 << 20)
    const third = body(4 << 20, 'c')
    expect(await send(third)).toBe(200)
    expect(received.at(-1)).toBe(sha(third))
    expect(budget.inUse).toBe(0)
  })

  it('gives the buffer up when the call is cut, and a body larger than every idle buffer gets a fresh one', async () => {
    budget.buffers.dropIdle()
    expect(await send(body(4 << 20, 'd'))).toBe(200)
    expect(budget.buffers.held).toBe(4 << 20)
    status = 0 // the upstream reads the body and drops the connection
    const cut = body(4 << 20, 'e')
    expect(await send(cut)).toBe(502)
    expect(received.at(-1)).toBe(sha(cut))
    expect(budget.buffers.held).toBe(0)
    status = 200
    const larger = body(6 << 20, 'f')
    expect(await send(larger)).toBe(200)
    expect(received.at(-1)).toBe(sha(larger))
    expect(budget.buffers.held).toBe(6 << 20)
    budget.buffers.dropIdle()
    expect(budget.buffers.held).toBe(0)
  })
})
