// Routing bench (issue 34, Routing by model name): what choosing the placement by the body's
// `model` adds to a relayed request. The real relay (relayRoutes, PlacementUpstreams, request log
// with usage accounting) runs in this process in front of 8 fake engines on loopback in a child
// process, once with 1 placement and once with 8, a router choosing by model (the test rig's
// FakeRouter: the models domain's own lookup is a scan of the same few placements). One client
// sends non-stream chat requests one at a time, the 8-placement relay's spread over all 8 models;
// the two relays take turns in blocks, so drift on the machine falls on both alike. Printed: p50
// and p99 of each, the added p50 of 8 over 1 against its target, the routing step alone (router
// plus pool lookup) in ns, and the pools open against their bound.
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
import { spawnChild } from './lib/child'

const SELF = fileURLToPath(import.meta.url)
const ROOT = path.resolve(path.dirname(SELF), '../..')
const ENGINES = 8
const BLOCKS = 12
const PER_BLOCK = 500
const WARMUP = 1000
/** Target: 8 placements add at most this much to a request's p50 over 1 placement. */
const TARGET_ADDED_P50_MS = 0.2

/** Child: 8 engines, each answering a small chat completion at once. */
function runEngines(): void {
  const ports: number[] = []
  const answer = Buffer.from(JSON.stringify({ id: 'c1', choices: [{ message: { content: 'ok' } }] }))
  let listening = 0
  for (let i = 0; i < ENGINES; i++) {
    const server = http.createServer((req, res) => {
      req.resume()
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(answer))
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
    const route = relay.router.routeNow(relay.models[i % relay.models.length]!)!
    sink += relay.placements.upstream(route).basePath.length
  }
  const ns = Number(process.hrtime.bigint() - t0) / rounds
  if (sink < 0) throw new Error('unreachable')
  return ns
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
  } finally {
    await Promise.all(clients.map((c) => c.close()))
    await Promise.all([one.close(), eight.close()])
    proc.stdin?.end()
  }
}

if (process.argv.includes('--role=engines')) runEngines()
else await main()
