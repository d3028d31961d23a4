import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { relayRoute } from '../../../src-main/gateway/relay/proxy'
import { armBodyDeadline } from '../../../src-main/http/bodyDeadline'
import { RequestLog } from '../../../src-main/gateway/relay/requestLog'
import { systemClock } from '../../../src-main/lib/clock'
import { Upstreams } from '../../../src-main/gateway/relay/upstreams'
import { ServiceDirectory } from '../../../src-main/cluster/serviceDirectory'
import { loadConfig } from '../../../src-main/config/load'
import { startFakeLlm, type FakeLlm } from '../../sim/http'
import { waitFor } from './setup'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { BodyBudget, bodyBudgetLimits } from '../../../src-main/gateway/relay/bodyBudget'
import { RelayBodyParser } from '../../../src-main/gateway/relay/relayBodyParser'
import { GATEWAY_JSON_DEPTH } from '../../../src-main/gateway/relay/wire'

/** The proxy's timeout, with a short limit in place of the 30 minutes (the daemon's default). */
describe('relay timeout', () => {
  let llm: FakeLlm
  let server: http.Server
  let url: string
  let upstreams: Upstreams
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-proxy-'))

  beforeAll(async () => {
    llm = await startFakeLlm()
    const config = loadConfig({
      env: { DATA_DIR: dataDir, NODE1_HOST: '127.0.0.1', NODE1_USER: 'x', LLM_PORT: String(llm.port) },
    })
    upstreams = new Upstreams(new ServiceDirectory(config))
    const logger = createLogger({ sink: new MemorySink() })
    const relay = relayRoute(
      {
        need: () => upstreams.get('llm')!,
        log: new RequestLog(systemClock),
        logger,
        timeoutMs: 300,
        bodyLimit: 1 << 20,
        bodyBudget: new BodyBudget(bodyBudgetLimits(64 << 20)),
        bodyIdleMs: 10_000,
        parser: new RelayBodyParser({ maxDepth: GATEWAY_JSON_DEPTH, timeoutMs: 60_000 }),
        drainMs: 1000,
      },
      { path: '/v1/chat/completions', upstream: 'llm', upstreamPath: () => '/v1/chat/completions' },
    )
    server = http.createServer((req, res) => {
      // The body's deadline is the server's, armed before any route runs.
      if (req.headers['x-body-deadline']) armBodyDeadline(req, res, 200)
      relay(req, res)
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    upstreams.destroy()
    await new Promise((r) => server.close(r))
    await llm.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('answers 504 when the llm never answers, and frees the upstream request', async () => {
    await llm.setFault('hang')
    const res = await fetch(url, { method: 'POST', body: JSON.stringify({ messages: [] }) })
    expect(res.status).toBe(504)
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/llm did not finish within/)
    await waitFor(() => llm.requests.at(-1)!.closedEarly)
    await llm.setFault('none')
    expect(llm.openRequests).toBe(0)
  })

  it('ends a stream that stalls past the limit with an error event', async () => {
    await llm.setFault({ kind: 'slow', delayMs: 5000 })
    const res = await fetch(url, {
      method: 'POST',
      body: JSON.stringify({ stream: true, messages: [{ role: 'user', content: 'a' }] }),
    })
    const text = await res.text()
    await llm.setFault('none')
    expect(res.status).toBe(200)
    expect(text).toMatch(/event: error\ndata: .*did not finish within/)
  })

  it('answers 408 when the body stops arriving, before the call deadline would have', async () => {
    const status = await new Promise<string>((resolve, reject) => {
      const req = http.request(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': '100', 'x-body-deadline': '1' },
      })
      req.on('response', (res) => resolve(String(res.statusCode)))
      req.on('error', reject)
      req.write('{"messages":')
    })
    expect(status).toBe('408')
  })

  it('leaves no call on the upstream pool once its requests are over', async () => {
    const body = JSON.stringify({ messages: [{ role: 'user', content: 'a' }] })
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        fetch(url, {
          method: 'POST',
          body: i % 2 === 0 ? body : JSON.stringify({ stream: true, messages: [] }),
          headers: i % 4 === 0 ? { 'x-body-deadline': '1' } : {},
        }).then((r) => r.text().then(() => r.status)),
      ),
    )
    expect(answers).toEqual(Array(20).fill(200))
    const { running, pending } = upstreams.get('llm')!.pool.stats
    expect([running, pending]).toEqual([0, 0])
  })
})
