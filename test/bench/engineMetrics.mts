// Engine metrics bench (issue 44): what reading each placement engine's own /metrics costs.
// Eight simulated vLLM engines (test/sim's fake llm, serving vLLM's page from
// test/fixtures/engine-metrics/) run in a child process; in this process run the headless daemon
// (relaying to the first engine) and an EngineMetrics over all eight, as the models domain builds it.
// Printed, never asserted:
//  1. /metrics render time (p50, p99) and size with 8 placements federated: the daemon's own registry
//     text plus the federated families, kept families and all families;
//  2. scrape cost per tick: wall time of one round over 8 engines and the CPU this process spent on it;
//  3. added latency to a relayed request (non-stream chat through the daemon to an engine of its own)
//     sent while a scrape round is in progress, against requests with none running (blocks
//     alternated, so drift falls on both); at 15 s between rounds, the share of time a round runs.
// Loopback only, every loop bounded. Run: npx tsx test/bench/engineMetrics.mts
import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Registry } from 'prom-client'
import { startDaemon } from '../../src-main/headless'
import { createLogger, MemorySink, Redactor } from '../../src-main/lib/logger'
import { federate } from '../../src-main/metrics/federation'
import { EngineMetrics, type EngineTarget } from '../../src-main/models/engineMetrics'
import { benchDaemonEnv, spawnChild } from './lib/child'

const SELF = fileURLToPath(import.meta.url)
const ROOT = path.resolve(path.dirname(SELF), '../..')
const ENGINES = 8
const RENDERS = 200
const TICKS = 30
const BLOCKS = 10
const PER_BLOCK = 100
const TICKS_PER_BLOCK = 10
/** Targets (printed as met / not met). */
const TARGET_RENDER_P50_MS = 10
const TARGET_TICK_CPU_MS = 30
const TARGET_ADDED_P50_MS = 0.5

/** The engine relayed to: the sim's fake llm. */
async function runRelayEngine(): Promise<void> {
  const { startFakeLlm } = await import('../sim/http')
  const llm = await startFakeLlm({ model: 'sim/model-0' })
  process.stdout.write(JSON.stringify({ ports: [llm.port] }) + '\n')
}

/**
 * The engines scraped: each serves the sim's page as it stands after some load, rendered once, so
 * their own work (on their own machines in a cluster) takes as little of this machine as it can.
 */
async function runScrapedEngines(count: number): Promise<void> {
  const { SimEngineMetrics } = await import('../sim/http/vllmMetrics')
  const ports: number[] = []
  for (let i = 0; i < count; i++) {
    const sim = new SimEngineMetrics()
    for (let j = 0; j < 20; j++) {
      const r = sim.begin(`hello ${j}`, 5, null)
      r.firstToken()
      for (let k = 0; k < 30; k++) r.token()
      r.end('stop')
    }
    const page = sim.render(`sim/model-${i}`)
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' })
      res.end(page)
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    ports.push((server.address() as AddressInfo).port)
  }
  process.stdout.write(JSON.stringify({ ports }) + '\n')
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN
}
const ms = (n: number): string => `${n.toFixed(3)} ms`
const verdict = (ok: boolean): string => (ok ? 'met' : 'not met')

async function main(): Promise<void> {
  // The scraped engines and the one relayed to in processes of their own, as engines are on their nodes.
  const { proc, info } = await spawnChild(SELF, ['--role=scraped', String(ENGINES)], { cwd: ROOT })
  const relayEngine = await spawnChild(SELF, ['--role=relay'], { cwd: ROOT })
  const ports = info.ports as number[]
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-engine-metrics-'))
  const env = await benchDaemonEnv((relayEngine.info.ports as number[])[0]!, 9, dataDir)
  const daemon = await startDaemon({
    env: { ...env, ENGINE_METRICS_INTERVAL_S: '0', MONITOR_INTERVAL_S: '0' },
    dataDir,
  })
  const logger = createLogger({ redactor: new Redactor(), sink: new MemorySink(), level: 'error' })
  const targets: EngineTarget[] = ports.map((port, i) => ({
    placement: `node${i + 1}`,
    node: `node${i + 1}` as EngineTarget['node'],
    model: `model-${i}`,
    baseUrl: `http://127.0.0.1:${port}`,
  }))
  try {
    const metricsModule = daemon.core.modules.find((m) => m.name === 'metrics') as unknown as { registry: Registry }
    for (const keepAll of [false, true]) {
      const engines = new EngineMetrics({ targets: () => targets, now: Date.now, logger, intervalMs: 15_000, keepAll })
      await engines.scrape()
      const times: number[] = []
      let size = 0
      for (let i = 0; i < RENDERS; i++) {
        const t0 = performance.now()
        const own = await metricsModule.registry.metrics()
        const reserved = new Set(metricsModule.registry.getMetricsAsArray().map((m) => m.name))
        const text = own + federate(engines.pages(), reserved).text
        times.push(performance.now() - t0)
        size = Buffer.byteLength(text)
      }
      const p50 = pct(times, 50)
      console.log(
        `/metrics with ${ENGINES} placements (${keepAll ? 'all families' : 'kept families'}): ` +
          `p50 ${ms(p50)}, p99 ${ms(pct(times, 99))}, ${(size / 1024).toFixed(1)} KiB` +
          (keepAll ? '' : ` — target p50 ≤ ${TARGET_RENDER_P50_MS} ms: ${verdict(p50 <= TARGET_RENDER_P50_MS)}`),
      )
    }

    const engines = new EngineMetrics({
      targets: () => targets,
      now: Date.now,
      logger,
      intervalMs: 15_000,
      keepAll: false,
    })
    const walls: number[] = []
    const cpus: number[] = []
    for (let i = 0; i < TICKS; i++) {
      const c0 = process.cpuUsage()
      const t0 = performance.now()
      await engines.scrape()
      walls.push(performance.now() - t0)
      const c = process.cpuUsage(c0)
      cpus.push((c.user + c.system) / 1000)
    }
    const cpu50 = pct(cpus, 50)
    console.log(
      `scrape tick over ${ENGINES} engines: wall p50 ${ms(pct(walls, 50))}, p99 ${ms(pct(walls, 99))}; ` +
        `CPU p50 ${ms(cpu50)}, p99 ${ms(pct(cpus, 99))} — target CPU p50 ≤ ${TARGET_TICK_CPU_MS} ms: ${verdict(cpu50 <= TARGET_TICK_CPU_MS)}`,
    )

    const body = JSON.stringify({ model: 'sim/model-0', messages: [{ role: 'user', content: 'hi' }] })
    const relayed = async (): Promise<number> => {
      const t0 = performance.now()
      const res = await fetch(`http://127.0.0.1:${env.PORT}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${daemon.core.adminToken}` },
        body,
      })
      await res.text()
      if (res.status !== 200) throw new Error(`relayed request answered ${res.status}`)
      return performance.now() - t0
    }
    for (let i = 0; i < 200; i++) await relayed()
    const quiet: number[] = []
    const during: number[] = []
    for (let b = 0; b < BLOCKS; b++) {
      for (let i = 0; i < PER_BLOCK; i++) quiet.push(await relayed())
      // Requests sent one after another while a scrape round is in progress, round after round
      // with a pause between (the engines' own processes settle, as they would in 15 s).
      for (let t = 0; t < TICKS_PER_BLOCK; t++) {
        let done = false
        const tick = engines.scrape().then(() => (done = true))
        while (!done) during.push(await relayed())
        await tick
        await new Promise((r) => setTimeout(r, 30))
      }
    }
    const added50 = pct(during, 50) - pct(quiet, 50)
    const share = pct(walls, 50) / 15_000
    console.log(
      `relayed request, no scrape running: p50 ${ms(pct(quiet, 50))}, p99 ${ms(pct(quiet, 99))} (${quiet.length}); ` +
        `while a scrape round runs: p50 ${ms(pct(during, 50))}, p99 ${ms(pct(during, 99))} (${during.length})`,
    )
    console.log(
      `added while a round runs: p50 ${ms(added50)}, p99 ${ms(pct(during, 99) - pct(quiet, 99))}; a round every 15 s ` +
        `overlaps ${(share * 100).toFixed(2)} % of the time — target added p50 ≤ ${TARGET_ADDED_P50_MS} ms: ${verdict(added50 <= TARGET_ADDED_P50_MS)}`,
    )
  } finally {
    await daemon.stop()
    proc.kill()
    relayEngine.proc.kill()
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

if (process.argv.includes('--role=scraped')) await runScrapedEngines(Number(process.argv.at(-1)))
else if (process.argv.includes('--role=relay')) await runRelayEngine()
else await main()
