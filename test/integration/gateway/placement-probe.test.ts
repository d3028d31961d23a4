import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ApiError } from '../../../src-main/contract/errors'
import { systemClock } from '../../../src-main/lib/clock'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { BodyBudget, bodyBudgetLimits } from '../../../src-main/gateway/relay/bodyBudget'
import { PlacementUpstreams } from '../../../src-main/gateway/relay/placementUpstreams'
import { relayRoutes } from '../../../src-main/gateway/relay/proxyRoutes'
import { RequestLog } from '../../../src-main/gateway/relay/requestLog'
import { DEFAULT_UPSTREAM_TIMEOUTS } from '../../../src-main/gateway/relay/upstreams'
import { LoopbackServer } from '../../fakes/loopback'
import { FakeRouter } from '../../helpers/fakeRouter'
import { RelayBodyParser } from '../../../src-main/gateway/relay/relayBodyParser'
import { GATEWAY_JSON_DEPTH } from '../../../src-main/gateway/relay/wire'

/**
 * A relayed request failing on a placement's engine asks deep health to probe that placement
 * (docs/placements.md, Deep health): the relay knows the route, so the probe names it.
 */
let healthy: LoopbackServer
let wedged: LoopbackServer
let placements: PlacementUpstreams
let server: http.Server
let url: string
const probes: { subject: string; reason: string }[] = []

beforeAll(async () => {
  healthy = await new LoopbackServer(() => ({ status: 200, body: { ok: true } })).start()
  wedged = await new LoopbackServer(() => ({
    status: 500,
    body: { error: { message: 'CUDA error: cudaErrorUnknown', type: 'InternalServerError', code: 500 } },
  })).start()
  const router = new FakeRouter([
    { id: 'node1', baseUrl: healthy.url, served: 'org/Big', key: 'big' },
    { id: 'node3+node4', baseUrl: wedged.url, served: 'org/Vision', key: 'vision' },
  ])
  placements = new PlacementUpstreams(router, DEFAULT_UPSTREAM_TIMEOUTS, (subject, reason) => {
    probes.push({ subject, reason })
  })
  const relayed = relayRoutes({
    need: (name) => {
      throw new ApiError('unavailable', `${name} is not configured`)
    },
    log: new RequestLog(systemClock),
    proxyTimeoutMs: 10_000,
    drainMs: 1000,
    logger: createLogger({ sink: new MemorySink() }),
    placements,
    bodyBudget: new BodyBudget(bodyBudgetLimits(64 << 20)),
    bodyIdleMs: 10_000,
    parser: new RelayBodyParser({ maxDepth: GATEWAY_JSON_DEPTH, timeoutMs: 60_000 }),
  })
  server = http.createServer((req, res) => relayed.get(req.url ?? '')?.(req, res))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  placements.destroy()
  server.closeAllConnections()
  await new Promise((r) => server.close(r))
  await Promise.all([healthy.stop(), wedged.stop()])
})

const chat = (model: string): Promise<Response> =>
  fetch(`${url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ model, messages: [] }) })

describe('the relay asks deep health to probe the placement that failed', () => {
  it('probes llm@node3+node4 after its engine answers 500, and nothing after a good answer elsewhere', async () => {
    expect((await chat('big')).status).toBe(200)
    expect(probes).toEqual([])
    const res = await chat('vision')
    expect(res.status).toBe(500)
    expect(await res.text()).toMatch(/cudaErrorUnknown/)
    expect(probes).toEqual([{ subject: 'llm@node3+node4', reason: expect.stringMatching(/HTTP 500/) }])
  })

  it('leaves node1’s engine to the llm service’s own probes, as before placements', async () => {
    probes.length = 0
    const router = placements.router as FakeRouter
    const big = router.routes[0]!
    router.routes[0] = { ...big, baseUrl: wedged.url }
    try {
      expect((await chat('big')).status).toBe(500)
    } finally {
      router.routes[0] = big
    }
    expect(probes).toEqual([])
  })

  it('probes the placement whose engine cannot be reached', async () => {
    probes.length = 0
    const gone = await new LoopbackServer(() => ({ status: 200, body: {} })).start()
    const base = gone.url
    await gone.stop()
    const router = placements.router as FakeRouter
    router.routes.push({ id: 'node5', baseUrl: base, served: 'org/Gone', key: 'gone' })
    const res = await chat('gone')
    expect(res.status).toBeGreaterThanOrEqual(500)
    expect(probes).toEqual([{ subject: 'llm@node5', reason: expect.stringMatching(/unreachable/) }])
  })
})
