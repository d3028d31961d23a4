import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger, MemorySink } from '../../../src-main/core/logger'
import { relayDeadlines, relayRoute } from '../../../src-main/gateway/proxy'
import { RequestLog } from '../../../src-main/gateway/requestLog'
import { systemClock } from '../../../src-main/core/clock'
import { Upstreams } from '../../../src-main/gateway/upstreams'
import { ServiceDirectory } from '../../../src-main/core/serviceDirectory'
import { loadConfig } from '../../../src-main/config/load'
import { startFakeLlm, type FakeLlm } from '../../sim/http'
import { waitFor } from './setup'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

/** The proxy's timeout, with a short limit in place of the 30 minutes (the daemon's default). */
describe('relay timeout', () => {
  let llm: FakeLlm
  let server: http.Server
  let url: string
  let upstreams: Upstreams
  const deadlines = relayDeadlines()
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
        drainMs: 1000,
        deadlines,
      },
      { path: '/v1/chat/completions', upstream: 'llm', upstreamPath: () => '/v1/chat/completions' },
    )
    server = http.createServer((req, res) => relay(req, res, req.headers['x-body-deadline'] ? 200 : 0))
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

  it('leaves no deadline behind once its requests are over, answered or timed out', async () => {
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
    // Checked at once: left behind, they would linger until the 300 ms call deadline passed.
    expect(deadlines.pending).toBe(0)
  })
})
