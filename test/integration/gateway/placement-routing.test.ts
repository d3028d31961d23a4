import http from 'node:http'
import type { AddressInfo } from 'node:net'
import parsePrometheusTextFormat from 'parse-prometheus-text-format'
import { Registry } from 'prom-client'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { ApiError } from '../../../src-main/contract/errors'
import { requestState } from '../../../src-main/http/requestState'
import { systemClock } from '../../../src-main/lib/clock'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { BodyBudget, bodyBudgetLimits } from '../../../src-main/gateway/relay/bodyBudget'
import { ModelLists } from '../../../src-main/gateway/relay/modelLists'
import { PlacementUpstreams } from '../../../src-main/gateway/relay/placementUpstreams'
import { relayRoutes } from '../../../src-main/gateway/relay/proxyRoutes'
import { RequestLog } from '../../../src-main/gateway/relay/requestLog'
import { DEFAULT_UPSTREAM_TIMEOUTS, openUpstream, type Upstream } from '../../../src-main/gateway/relay/upstreams'
import { gatewayMetrics } from '../../../src-main/metrics/gatewayMetrics'
import type { PlacementRoute } from '../../../src-main/models/types'
import { LoopbackServer } from '../../fakes/loopback'
import { FakeRouter } from '../../helpers/fakeRouter'
import { waitFor } from './setup'
import { RelayBodyParser } from '../../../src-main/gateway/relay/relayBodyParser'
import { playgroundHandlers } from '../../../src-main/gateway/playground'
import type { UploadSpool } from '../../../src-main/gateway/audio/spool'
import type { VoiceAliases } from '../../../src-main/gateway/audio/speech'
import { GATEWAY_JSON_DEPTH } from '../../../src-main/gateway/relay/wire'

/**
 * Routing by model name (docs/placements.md, Routing) through the real relay, with a fake router
 * over three engines on loopback and a separate embeddings service.
 */
const engines: Record<string, LoopbackServer> = {}
let embeddings: LoopbackServer
let embeddingsUp: Upstream
let router: FakeRouter
let placements: PlacementUpstreams
let server: http.Server
let url: string
let lists: ModelLists
const log = new RequestLog(systemClock)
const registry = new Registry()
log.observe(gatewayMetrics([registry], () => log.openStreams))

/** Every engine answers with its own name, so a test sees where a request went. */
function engine(name: string): LoopbackServer {
  return new LoopbackServer((req) => ({ status: 200, body: { engine: name, asked: JSON.parse(req.body) as unknown } }))
}

const route = (id: string, served: string, key: string | null): PlacementRoute => ({
  id,
  baseUrl: engines[id]!.url,
  served,
  key,
})

beforeAll(async () => {
  for (const id of ['node1', 'node2', 'node3+node4']) engines[id] = await engine(id).start()
  embeddings = await new LoopbackServer(() => ({ status: 200, body: { engine: 'embeddings' } })).start()
  embeddingsUp = openUpstream('embeddings', embeddings.url, DEFAULT_UPSTREAM_TIMEOUTS)
  const need = (name: string): Upstream => {
    if (name === 'embeddings') return embeddingsUp
    throw new ApiError('unavailable', `${name} is not configured`)
  }
  router = new FakeRouter([])
  placements = new PlacementUpstreams(router, DEFAULT_UPSTREAM_TIMEOUTS)
  const logger = createLogger({ sink: new MemorySink() })
  const relayed = relayRoutes({
    need,
    log,
    proxyTimeoutMs: 10_000,
    drainMs: 1000,
    logger,
    placements,
    bodyBudget: new BodyBudget(bodyBudgetLimits(64 << 20)),
    bodyIdleMs: 10_000,
    parser: new RelayBodyParser({ maxDepth: GATEWAY_JSON_DEPTH, timeoutMs: 60_000 }),
  })
  lists = new ModelLists(need, systemClock, logger, () => router.placed())
  server = http.createServer((req, res) => {
    // A named key whose models the test sets in a header (the edge's credential check, in short).
    const models = req.headers['x-key-models']
    if (typeof models === 'string')
      requestState(res).consumer = { kind: 'key', id: 'k1', name: 'team', models: models.split(','), licensed: false }
    const relay = relayed.get(req.url ?? '')
    if (relay) return relay(req, res)
    void lists.openAiList().then((list) => res.end(JSON.stringify(list)))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

beforeEach(() => {
  router.routes = [
    route('node1', 'org/Big-120B', 'big'),
    route('node2', 'org/Coder-30B', 'coder'),
    route('node3+node4', 'org/Vision-12B', 'vision'),
  ]
  router.lost.clear()
})

afterAll(async () => {
  placements.destroy()
  await embeddingsUp.pool.destroy()
  server.closeAllConnections()
  await new Promise((r) => server.close(r))
  await Promise.all([...Object.values(engines), embeddings].map((e) => e.stop()))
})

async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url + path, { method: 'POST', headers, body: JSON.stringify(body) })
}

async function engineOf(res: Response): Promise<string> {
  expect(res.status).toBe(200)
  return ((await res.json()) as { engine: string }).engine
}

describe('routing by model name', () => {
  it('sends chat and completions to the placement serving the model, by served name or catalog key', async () => {
    expect(await engineOf(await post('/v1/chat/completions', { model: 'org/Coder-30B', messages: [] }))).toBe('node2')
    expect(await engineOf(await post('/v1/chat/completions', { model: 'vision', messages: [] }))).toBe('node3+node4')
    expect(await engineOf(await post('/v1/completions', { model: 'big', prompt: 'a' }))).toBe('node1')
    // No model: the placement that includes node1.
    expect(await engineOf(await post('/v1/chat/completions', { messages: [] }))).toBe('node1')
    // Named by catalog key, the body goes as it came: Tandem launches the engine with the key among its names.
    expect(engines['node3+node4']!.requests.at(-1)!.body).toBe(JSON.stringify({ model: 'vision', messages: [] }))
    // Named by served name, it goes on verbatim.
    const verbatim = '{ "model" : "org/Vision-12B", "messages": [] }'
    const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', body: verbatim })
    expect(await engineOf(res)).toBe('node3+node4')
    expect(engines['node3+node4']!.requests.at(-1)!.body).toBe(verbatim)
  })

  it('waits while the placement is held and then sends the request there', async () => {
    const release = router.hold('node2')
    const before = router.admitted
    const answer = post('/v1/chat/completions', { model: 'coder', messages: [] })
    await waitFor(() => router.admitted === before + 1)
    // The other placements keep serving meanwhile.
    expect(await engineOf(await post('/v1/chat/completions', { model: 'big', messages: [] }))).toBe('node1')
    release()
    expect(await engineOf(await answer)).toBe('node2')
  })

  it('answers a model no placement serves with 404 model_not_found in OpenAI’s shape, naming the placed ones', async () => {
    const before = Object.values(engines).reduce((n, e) => n + e.requests.length, 0)
    const res = await post('/v1/chat/completions', { model: 'org/Unknown-7B', messages: [] })
    expect(res.status).toBe(404)
    const body = (await res.json()) as { error: { code: string; type: string; message: string; param: string } }
    expect(body.error).toMatchObject({ code: 'model_not_found', type: 'invalid_request_error', param: 'model' })
    expect(body.error.message).toContain('org/Big-120B, org/Coder-30B, org/Vision-12B')
    expect(Object.values(engines).reduce((n, e) => n + e.requests.length, 0)).toBe(before)
  })

  it('answers a lost placement with 503 and Retry-After; the others keep serving', async () => {
    router.lost.add('node2')
    const res = await post('/v1/chat/completions', { model: 'coder', stream: true, messages: [] })
    expect(res.status).toBe(503)
    expect(res.headers.get('retry-after')).toBe('30')
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('placement_lost')
    expect(await engineOf(await post('/v1/chat/completions', { model: 'vision', messages: [] }))).toBe('node3+node4')
  })

  it('sends a model placed twice to its copy that answers while the other is lost', async () => {
    router.routes.push(route('node3+node4', 'org/Coder-30B', 'coder'))
    router.lost.add('node2')
    for (let i = 0; i < 3; i++)
      expect(await engineOf(await post('/v1/chat/completions', { model: 'coder', messages: [] }))).toBe('node3+node4')
    router.lost.clear()
    // Both answer: one request at a time goes to the first (none is busier).
    expect(await engineOf(await post('/v1/chat/completions', { model: 'org/Coder-30B', messages: [] }))).toBe('node2')
  })

  it('sends each request to the copy with the fewest in flight, and counts a request out when it ends', async () => {
    // Two copies of one model; the first holds its answers until released.
    const release: (() => void)[] = []
    const holding = http.createServer((req, res) => {
      req.resume()
      release.push(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"engine":"holding"}'))
    })
    await new Promise<void>((r) => holding.listen(0, '127.0.0.1', r))
    try {
      const holdingUrl = `http://127.0.0.1:${(holding.address() as AddressInfo).port}`
      router.routes = [
        { id: 'node5', baseUrl: holdingUrl, served: 'org/Twin-8B', key: 'twin' },
        route('node2', 'org/Twin-8B', 'twin'),
      ]
      const first = post('/v1/chat/completions', { model: 'twin', messages: [] })
      await waitFor(() => release.length === 1)
      // node5 has one in flight: the next two go to node2, one at a time.
      expect(await engineOf(await post('/v1/chat/completions', { model: 'twin', messages: [] }))).toBe('node2')
      expect(await engineOf(await post('/v1/chat/completions', { model: 'twin', messages: [] }))).toBe('node2')
      release.shift()!()
      expect(await engineOf(await first)).toBe('holding')
      // Its request ended: both are idle again, and the first copy is picked.
      const again = post('/v1/chat/completions', { model: 'twin', messages: [] })
      await waitFor(() => release.length === 1)
      release.shift()!()
      expect(await engineOf(await again)).toBe('holding')
    } finally {
      for (const r of release.splice(0)) r()
      holding.closeAllConnections()
      await new Promise((r) => holding.close(r))
    }
  })

  it('sends embeddings to a placement only when their model names one', async () => {
    expect(await engineOf(await post('/v1/embeddings', { model: 'coder', input: 'x' }))).toBe('node2')
    expect(await engineOf(await post('/v1/embeddings', { model: 'bge-m3', input: 'x' }))).toBe('embeddings')
    expect(await engineOf(await post('/v1/embeddings', { input: 'x' }))).toBe('embeddings')
  })

  it('lists every placement’s model in /v1/models, each once, beside the other services that answer', async () => {
    router.routes.push(route('node2', 'org/Coder-30B', 'coder'))
    const list = (await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string; owned_by: string }[] }
    expect(list.data.map((m) => m.id)).toEqual(['org/Big-120B', 'org/Coder-30B', 'org/Vision-12B'])
  })
})

describe('consumer keys per placement', () => {
  const as = (models: string) => ({ 'x-key-models': models })

  it('lets a key allowed a model reach its placement by served name or catalog key, and nothing else', async () => {
    expect(await engineOf(await post('/v1/chat/completions', { model: 'coder', messages: [] }, as('coder')))).toBe(
      'node2',
    )
    // Allowed by catalog key, named by served name, and the other way round.
    expect(
      await engineOf(await post('/v1/chat/completions', { model: 'org/Coder-30B', messages: [] }, as('coder'))),
    ).toBe('node2')
    expect(await engineOf(await post('/v1/completions', { model: 'coder', prompt: 'a' }, as('org/Coder-30B')))).toBe(
      'node2',
    )
    for (const body of [{ model: 'big' }, { model: 'org/Vision-12B' }, {}, { model: 'org/Unknown-7B' }]) {
      const res = await post('/v1/chat/completions', { ...body, messages: [] }, as('coder'))
      expect(res.status, JSON.stringify(body)).toBe(403)
      expect(await res.json()).toMatchObject({ error: { code: 'forbidden', param: 'model' } })
    }
  })

  it('applies to embeddings routed to a placement as well', async () => {
    expect((await post('/v1/embeddings', { model: 'big', input: 'x' }, as('coder'))).status).toBe(403)
    expect(await engineOf(await post('/v1/embeddings', { model: 'org/Coder-30B', input: 'x' }, as('coder')))).toBe(
      'node2',
    )
  })
})

describe('usage and metrics by placement', () => {
  /** Chat requests each placement served, as /metrics shows them now. */
  async function served(): Promise<Record<string, number>> {
    const fams = new Map(parsePrometheusTextFormat(await registry.metrics()).map((f) => [f.name, f]))
    const out: Record<string, number> = {}
    for (const m of fams.get('tandem_gateway_placement_requests_total')?.metrics ?? [])
      if (m.labels?.route === '/v1/chat/completions' && m.labels.status === '200')
        out[m.labels.placement!] = Number(m.value)
    return out
  }

  it('labels request-log entries and metrics with the placement, counting two placements apart', async () => {
    const before = await served()
    const seq0 = log.list(1)[0]?.seq ?? 0
    for (let i = 0; i < 3; i++) await engineOf(await post('/v1/chat/completions', { model: 'big', messages: [] }))
    await engineOf(await post('/v1/chat/completions', { model: 'coder', messages: [] }))
    await engineOf(await post('/v1/embeddings', { model: 'bge-m3', input: 'x' }))
    await waitFor(() => log.list(10, seq0).length === 5)
    expect(log.list(5).map((e) => e.placement)).toEqual([null, 'node2', 'node1', 'node1', 'node1'])
    const after = await served()
    expect((after.node1 ?? 0) - (before.node1 ?? 0)).toBe(3)
    expect((after.node2 ?? 0) - (before.node2 ?? 0)).toBe(1)
    expect(after.none).toBeUndefined()
    const text = await registry.metrics()
    expect(text).toMatch(
      /tandem_gateway_request_duration_seconds_count\{route="\/v1\/chat\/completions",placement="node2"\} \d/,
    )
  })
})

describe('the Gateway view’s Try it', () => {
  const unused = (): never => {
    throw new Error('not used by the chat')
  }
  const chat = (model?: string) =>
    playgroundHandlers({
      need: () => unused(),
      lists,
      voices: {} as VoiceAliases,
      spool: {} as UploadSpool,
      log,
      placements,
      probe: () => unused,
    }).playgroundChat({ prompt: 'hi', ...(model ? { model } : {}) }, { signal: new AbortController().signal } as never)

  it('offers the models /v1/models lists, each with the placement serving it', async () => {
    expect(await lists.servedModels()).toEqual([
      { id: 'org/Big-120B', placement: 'node1' },
      { id: 'org/Coder-30B', placement: 'node2' },
      { id: 'org/Vision-12B', placement: 'node3+node4' },
    ])
  })

  it('asks the placement serving the picked model and logs that placement', async () => {
    const asked = engines['node2']!.requests.length
    const events = []
    for await (const e of chat('org/Coder-30B')) events.push(e)
    expect(events.at(-1)).toMatchObject({ type: 'done', model: 'org/Coder-30B', placement: 'node2' })
    const sent = engines['node2']!.requests.slice(asked)
    expect(sent.map((r) => r.path)).toEqual(['/v1/chat/completions'])
    expect(JSON.parse(sent[0]!.body)).toMatchObject({ model: 'org/Coder-30B', stream: true })
    expect(log.list(1)[0]).toMatchObject({ path: '/api/gateway/playground/chat', playground: true, placement: 'node2' })
    expect(placements.inFlightOf('node2')).toBe(0)
  })

  it('without a pick, asks node1’s llm for its served model', async () => {
    const events = []
    for await (const e of chat()) events.push(e)
    expect(events.at(-1)).toMatchObject({ type: 'done', model: 'org/Big-120B', placement: 'node1' })
    expect(log.list(1)[0]!.placement).toBe('node1')
  })
})

describe('engine pools', () => {
  it('opens one pool per engine origin and closes those no placement has any more', async () => {
    for (const model of ['big', 'coder', 'vision'])
      await engineOf(await post('/v1/chat/completions', { model, messages: [] }))
    expect(placements.pools).toBe(3)
    router.routes = router.routes.filter((r) => r.id !== 'node2')
    placements.sweep()
    expect(placements.pools).toBe(2)
    // A route back on an origin gets a new pool, and making it sweeps the ones no longer placed.
    router.routes = [route('node2', 'org/Coder-30B', 'coder')]
    await engineOf(await post('/v1/chat/completions', { model: 'coder', messages: [] }))
    expect(placements.pools).toBe(1)
  })

  it('refuses a route whose engine address is not an http URL, without calling anything', async () => {
    router.routes = [{ id: 'node5', baseUrl: 'file:///etc/passwd', served: 'odd', key: null }]
    const res = await post('/v1/chat/completions', { model: 'odd', messages: [] })
    expect(res.status).toBe(503)
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/node5 has no usable engine/)
  })
})
