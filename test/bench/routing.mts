// Routing bench (issue 34, Routing by model name): what choosing the placement by the body's
// `model` adds to a relayed request. The real relay (relayRoutes, PlacementUpstreams, request log
// with usage accounting) runs in this process in front of 8 fake engines on loopback in a child
// process, once with 1 placement and once with 8, a router choosing by model (the test rig's
// FakeRouter: the models domain's own lookup is a scan of the same few placements). One client
// sends non-stream chat requests one at a time, the 8-placement relay's spread over all 8 models;
// the two relays take turns in blocks, so drift on the machine falls on both alike. Printed: p50
// and p99 of each, the added p50 of 8 over 1 against its target, the routing step alone (router
// plus pool lookup) in ns, and the pools open against their bound.
// Issue 41 adds two figures: the models domain's own router (PlacementManager over the test rig's
// engines, routing on what each engine lists) with one copy of a model and with eight, plus the
// gateway's least-busy pick; and the time to first token of a paced stream from an engine that
// forces usage into every event (vLLM's --enable-force-include-usage), for a client that asked for
// usage (passed through) and one that did not (the meter takes the usage out, event by event).
// Loopback only, every loop bounded; the target is printed as met / not met, never asserted.
// Run: npx tsx test/bench/routing.mts
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Pool } from 'undici'
import { systemClock } from '../../src-main/lib/clock'
import { createLogger, MemorySink } from '../../src-main/lib/logger'
import { BodyBudget, bodyBudgetLimits } from '../../src-main/gateway/relay/bodyBudget'
import { PlacementUpstreams } from '../../src-main/gateway/relay/placementUpstreams'
import { relayRoutes } from '../../src-main/gateway/relay/proxyRoutes'
import { RequestLog } from '../../src-main/gateway/relay/requestLog'
import { DEFAULT_UPSTREAM_TIMEOUTS } from '../../src-main/gateway/relay/upstreams'
import type { PlacementRoute } from '../../src-main/models/types'
import { FakeRouter } from '../helpers/fakeRouter'
import { placementRig } from '../helpers/placementRig'
import { spawnChild } from './lib/child'
import { RelayBodyParser } from '../../src-main/gateway/relay/relayBodyParser'
import { GATEWAY_JSON_DEPTH } from '../../src-main/gateway/relay/wire'

const SELF = fileURLToPath(import.meta.url)
const ROOT = path.resolve(path.dirname(SELF), '../..')
const ENGINES = 8
const BLOCKS = 12
const PER_BLOCK = 500
const WARMUP = 1000
/** Target: 8 placements add at most this much to a request's p50 over 1 placement. */
const TARGET_ADDED_P50_MS = 0.2
/** Target: the real router's step (routeNow + least-busy pick + pool lookup) with 8 copies of a model. */
const TARGET_ROUTER_NS = 20_000
/** Target: the usage filter adds at most this much to a stream's time to first token, p50. */
const TARGET_FILTER_TTFT_MS = 0.5
/** A paced stream: the engine's first event after PREFILL_MS, then one per TOKEN_MS. */
const STREAM_TOKENS = 20
const PREFILL_MS = 5
const TOKEN_MS = 1
const STREAMS = 400

/** One event of a stream from an engine forcing usage: the running counts ride on every event. */
function forcedEvent(n: number, last: boolean): string {
  const choices = last ? [] : [{ index: 0, delta: { content: ` t${n}` }, finish_reason: null }]
  const usage = { prompt_tokens: 9, total_tokens: 9 + n, completion_tokens: n }
  return `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'm', choices, usage })}\n\n`
}

/** The engine's paced stream: the prefill, one event per token, the usage event, then [DONE]. */
function pacedStream(res: http.ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' })
  let n = 0
  const next = (): void => {
    n++
    if (n <= STREAM_TOKENS) {
      res.write(forcedEvent(n, false))
      setTimeout(next, TOKEN_MS)
      return
    }
    res.end(forcedEvent(STREAM_TOKENS, true) + 'data: [DONE]\n\n')
  }
  setTimeout(next, PREFILL_MS)
}

/** Child: 8 engines, each answering a small chat completion at once (a stream when asked, paced). */
function runEngines(): void {
  const ports: number[] = []
  const answer = Buffer.from(JSON.stringify({ id: 'c1', choices: [{ message: { content: 'ok' } }] }))
  let listening = 0
  for (let i = 0; i < ENGINES; i++) {
    const server = http.createServer((req, res) => {
      const parts: Buffer[] = []
      req.on('data', (c: Buffer) => parts.push(c))
      req.on('end', () => {
        if (Buffer.concat(parts).includes('"stream":true')) return pacedStream(res)
        res.writeHead(200, { 'content-type': 'application/json' }).end(answer)
      })
    })
    server.listen(0, '127.0.0.1', () => {
      ports[i] = (server.address() as AddressInfo).port
      if (++listening === ENGINES) process.stdout.write(JSON.stringify({ ports }) + '\n')
    })
  }
  process.stdin.resume()
  process.stdin.on('end', () => process.exit(0))
}

interface Relay {
  readonly url: string
  readonly models: readonly string[]
  readonly placements: PlacementUpstreams
  readonly router: FakeRouter
  close(): Promise<void>
}

/** The relay's chat route in front of the first `n` engines, one placement each. */
async function startRelay(ports: readonly number[], n: number): Promise<Relay> {
  const routes: PlacementRoute[] = ports.slice(0, n).map((port, i) => ({
    id: `node${i + 1}`,
    baseUrl: `http://127.0.0.1:${port}`,
    served: `org/Model-${i + 1}`,
    key: `model-${i + 1}`,
  }))
  const router = new FakeRouter(routes)
  const placements = new PlacementUpstreams(router, DEFAULT_UPSTREAM_TIMEOUTS)
  const relayed = relayRoutes({
    need: () => {
      throw new Error('the bench routes every request to a placement')
    },
    log: new RequestLog(systemClock),
    proxyTimeoutMs: 60_000,
    drainMs: 1000,
    logger: createLogger({ sink: new MemorySink() }),
    placements,
    bodyBudget: new BodyBudget(bodyBudgetLimits(256 << 20)),
    bodyIdleMs: 10_000,
    parser: new RelayBodyParser({ maxDepth: GATEWAY_JSON_DEPTH, timeoutMs: 60_000 }),
  })
  const chat = relayed.get('/v1/chat/completions')!
  const server = http.createServer(chat)
  server.keepAliveTimeout = 60_000
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    models: routes.map((r) => r.served),
    placements,
    router,
    async close() {
      placements.destroy()
      server.closeAllConnections()
      await new Promise((r) => server.close(r))
    },
  }
}

/** Sends `count` requests one at a time, cycling over the relay's models; the latency of each (ms). */
async function block(client: Pool, relay: Relay, count: number, from: number): Promise<number[]> {
  const out: number[] = []
  for (let i = 0; i < count; i++) {
    const model = relay.models[(from + i) % relay.models.length]!
    const body = JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] })
    const t0 = performance.now()
    const res = await client.request({
      method: 'POST',
      path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json' },
      body,
    })
    await res.body.arrayBuffer()
    out.push(performance.now() - t0)
    if (res.statusCode !== 200) throw new Error(`the relay answered ${res.statusCode}`)
  }
  return out
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}

/** The routing step alone, as the relay takes it for a request: the router's answer, then the pool. */
function routingStepNs(relay: Relay, rounds: number): number {
  let sink = 0
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < rounds; i++) {
    const routes = relay.router.routeNow(relay.models[i % relay.models.length]!)!
    sink += relay.placements.upstream(relay.placements.pick(routes)).basePath.length
  }
  const ns = Number(process.hrtime.bigint() - t0) / rounds
  if (sink < 0) throw new Error('unreachable')
  return ns
}

/**
 * The models domain's router (PlacementManager) over the test rig's loopback engines, `copies`
 * placements of one model: ns per routeNow + least-busy pick + pool lookup, a request in flight on
 * each route picked (so the pick spreads them).
 */
async function realRouterNs(copies: number, rounds: number): Promise<number> {
  const rig = await placementRig({ extraNodes: Math.max(0, copies - 2) })
  const upstreams = new PlacementUpstreams(rig.placements, DEFAULT_UPSTREAM_TIMEOUTS)
  try {
    for (let i = 0; i < copies; i++) await rig.placed('coder', [rig.names[i]!])
    if (rig.placements.routeNow('coder')?.length !== copies) throw new Error('the copies do not all answer')
    let sink = 0
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < rounds; i++) {
      const route = upstreams.pick(rig.placements.routeNow('coder')!)
      upstreams.begin(route.id)
      sink += upstreams.upstream(route).basePath.length
      if (i % copies === copies - 1) for (const r of rig.placements.placed()) upstreams.end(r.id)
    }
    const ns = Number(process.hrtime.bigint() - t0) / rounds
    if (sink < 0) throw new Error('unreachable')
    return ns
  } finally {
    upstreams.destroy()
    await rig.close()
  }
}

/** Time to the first text of a paced stream through the relay (ms), and to its end; `asked` sets include_usage. */
async function streamOnce(client: Pool, model: string, asked: boolean): Promise<{ ttft: number; total: number }> {
  const body = JSON.stringify({
    model,
    stream: true,
    messages: [{ role: 'user', content: 'hi' }],
    ...(asked ? { stream_options: { include_usage: true } } : {}),
  })
  const t0 = performance.now()
  const res = await client.request({
    method: 'POST',
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json' },
    body,
  })
  let ttft = -1
  let text = ''
  for await (const chunk of res.body) {
    text += (chunk as Buffer).toString('utf8')
    if (ttft < 0 && text.includes('"content"')) ttft = performance.now() - t0
  }
  if (res.statusCode !== 200 || ttft < 0) throw new Error(`the relay answered ${res.statusCode} without text`)
  // The client that did not ask must not see usage; the one that asked must.
  if (asked !== text.includes('"usage"')) throw new Error(`usage ${asked ? 'missing' : 'leaked'} in the stream`)
  return { ttft, total: performance.now() - t0 }
}

/** Streams with and without include_usage, taking turns; the TTFT and whole-stream samples of each. */
async function streamSamples(client: Pool, model: string): Promise<Record<'asked' | 'filtered', number[][]>> {
  const out = { asked: [[], []] as number[][], filtered: [[], []] as number[][] }
  for (let i = 0; i < 40; i++) await streamOnce(client, model, i % 2 === 0)
  for (let i = 0; i < STREAMS; i++) {
    const asked = i % 2 === 0
    const r = await streamOnce(client, model, asked)
    const into = asked ? out.asked : out.filtered
    into[0]!.push(r.ttft)
    into[1]!.push(r.total)
  }
  return out
}

async function main(): Promise<void> {
  const { proc, info } = await spawnChild(SELF, ['--role=engines'], { cwd: ROOT })
  const ports = info.ports as number[]
  const one = await startRelay(ports, 1)
  const eight = await startRelay(ports, ENGINES)
  const clients = [new Pool(one.url, { connections: 1 }), new Pool(eight.url, { connections: 1 })] as const
  try {
    await block(clients[0], one, WARMUP, 0)
    await block(clients[1], eight, WARMUP, 0)
    const samples: [number[], number[]] = [[], []]
    for (let b = 0; b < BLOCKS; b++) {
      samples[0].push(...(await block(clients[0], one, PER_BLOCK, b * PER_BLOCK)))
      samples[1].push(...(await block(clients[1], eight, PER_BLOCK, b * PER_BLOCK)))
    }
    const [p50One, p50Eight] = [quantile(samples[0], 0.5), quantile(samples[1], 0.5)]
    const added = p50Eight - p50One
    const fmt = (ms: number): string => `${ms.toFixed(3)} ms`
    console.log(`requests per configuration: ${BLOCKS * PER_BLOCK} (after ${WARMUP} warm-up), one at a time`)
    console.log(`1 placement:  p50 ${fmt(p50One)}, p99 ${fmt(quantile(samples[0], 0.99))}`)
    console.log(`8 placements: p50 ${fmt(p50Eight)}, p99 ${fmt(quantile(samples[1], 0.99))}`)
    console.log(
      `added p50 of 8 placements over 1: ${fmt(added)} (target ≤ ${TARGET_ADDED_P50_MS} ms): ` +
        (added <= TARGET_ADDED_P50_MS ? 'met' : 'not met'),
    )
    console.log(
      `routing step alone (routeNow + pool lookup): 1 placement ${routingStepNs(one, 1_000_000).toFixed(0)} ns, ` +
        `8 placements ${routingStepNs(eight, 1_000_000).toFixed(0)} ns`,
    )
    const bound = eight.router.placed().length + 1
    console.log(
      `pools open with 8 placements: ${eight.placements.pools} (bound: placements + 1 = ${bound}): ` +
        (eight.placements.pools <= bound ? 'met' : 'not met'),
    )
    const [realOne, realEight] = [await realRouterNs(1, 200_000), await realRouterNs(8, 200_000)]
    console.log(
      `real router (PlacementManager, routing on the engines' lists) + least-busy pick + pool lookup: ` +
        `1 copy ${realOne.toFixed(0)} ns, 8 copies ${realEight.toFixed(0)} ns (target ≤ ${TARGET_ROUTER_NS} ns): ` +
        (realEight <= TARGET_ROUTER_NS ? 'met' : 'not met'),
    )
    const streams = await streamSamples(clients[0], one.models[0]!)
    const p = (xs: number[], q: number): string => quantile(xs, q).toFixed(2)
    const [asked, filtered] = [streams.asked, streams.filtered]
    console.log(
      `paced streams (${STREAM_TOKENS} tokens, ${PREFILL_MS} ms prefill, ${TOKEN_MS} ms apart, usage forced on every event), ` +
        `${STREAMS / 2} each, taking turns:`,
    )
    console.log(
      `  include_usage asked (passed through): TTFT p50 ${p(asked[0]!, 0.5)} ms, p99 ${p(asked[0]!, 0.99)} ms; ` +
        `whole stream p50 ${p(asked[1]!, 0.5)} ms`,
    )
    console.log(
      `  not asked (usage taken out):          TTFT p50 ${p(filtered[0]!, 0.5)} ms, p99 ${p(filtered[0]!, 0.99)} ms; ` +
        `whole stream p50 ${p(filtered[1]!, 0.5)} ms`,
    )
    const filterCost = quantile(filtered[0]!, 0.5) - quantile(asked[0]!, 0.5)
    console.log(
      `usage filter's TTFT p50 cost: ${filterCost.toFixed(3)} ms (target ≤ ${TARGET_FILTER_TTFT_MS} ms): ` +
        (filterCost <= TARGET_FILTER_TTFT_MS ? 'met' : 'not met'),
    )
  } finally {
    await Promise.all(clients.map((c) => c.close()))
    await Promise.all([one.close(), eight.close()])
    proc.stdin?.end()
  }
}

if (process.argv.includes('--role=engines')) runEngines()
else await main()
