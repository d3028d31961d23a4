// Consumer keys and metrics bench (issue 16): gateway throughput with 20 named keys, usage accounting
// on vs off (the accounting must cost < 5 % of requests per second), and the time /metrics takes to
// render with 20 keys' gateway series and 10,000 licences. Loopback only, every loop bounded.
// Run: npx tsx test/bench/keys.mts
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { spawnChild } from './lib/child'

const SELF = fileURLToPath(import.meta.url)
const ROOT = path.resolve(path.dirname(SELF), '../..')
const role = process.argv.find((a) => a.startsWith('--role='))?.slice(7)
const ADMIN = 'bench-admin-token-0123456789'
const KEYS = 20
const CLIENTS = 16
const ROUNDS = 3

async function runUpstream(): Promise<void> {
  const { startFakeLlm } = await import('../sim/http/index')
  const llm = await startFakeLlm()
  process.stdout.write(JSON.stringify({ llm: llm.port }) + '\n')
  process.stdin.resume()
  process.stdin.on('end', () => process.exit(0))
}

/** Child: the real daemon with usage accounting switched by --accounting=on|off. */
async function runDaemon(accounting: boolean): Promise<void> {
  const { loadConfig } = await import('../../src-main/config/load')
  const { createCore } = await import('../../src-main/compose')
  const { createLogger, Redactor } = await import('../../src-main/lib/logger')
  const { startHttpServer } = await import('../../src-main/http/listen')
  const config = loadConfig({ env: process.env })
  const logger = createLogger({ redactor: new Redactor(), level: 'error' })
  const core = await createCore({ config, logger, gateway: { usageAccounting: accounting } })
  await core.start()
  const server = await startHttpServer(core, { port: 0, host: '127.0.0.1' }, { rendererDir: null })
  process.stdout.write(JSON.stringify({ url: server.url }) + '\n')
  process.stdin.resume()
  process.stdin.on('end', () => void server.close().then(() => core.stop().then(() => process.exit(0))))
}

let agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS })

function post(base: string, p: string, body: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      base + p,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          authorization: `Bearer ${token}`,
        },
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
        res.on('error', reject)
      },
    )
    req.setTimeout(30_000, () => req.destroy(new Error('timeout')))
    req.on('error', reject)
    req.end(body)
  })
}

async function createKeys(base: string): Promise<string[]> {
  const out: string[] = []
  for (let i = 0; i < KEYS; i++) {
    const res = await fetch(`${base}/api/consumer-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `client ${i + 1}`, requests_per_minute: 1_000_000, max_concurrent: 100 }),
    })
    out.push(((await res.json()) as { secret: string }).secret)
  }
  return out
}

/** CPU seconds (user + system) a process has used: per request, it does not depend on how busy the machine is. */
function cpuSeconds(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}

interface Run {
  rps: number
  /** Daemon CPU per request (µs). */
  cpuUs: number
}

/** Requests per second over `total` requests from CLIENTS loops, keys taken in turn, and the daemon's CPU per request. */
async function rps(base: string, pid: number, keys: string[], stream: boolean, total: number): Promise<Run> {
  agent.destroy()
  agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS })
  const body = JSON.stringify(
    stream
      ? { model: 'sim/Qwen3-8B-Instruct', prompt: 'x', max_tokens: 50, stream: true }
      : { model: 'sim/Qwen3-8B-Instruct', messages: [{ role: 'user', content: 'hello bench' }] },
  )
  const p = stream ? '/v1/completions' : '/v1/chat/completions'
  for (let i = 0; i < CLIENTS; i++) await post(base, p, body, keys[i % keys.length]!)
  let started = 0
  let done = 0
  const cpu0 = cpuSeconds(pid)
  const t0 = performance.now()
  const deadline = t0 + 30_000
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (started < total && performance.now() < deadline) {
        const key = keys[started++ % keys.length]!
        const status = await post(base, p, body, key)
        if (status !== 200) throw new Error(`${p} answered ${status}`)
        done++
      }
    }),
  )
  const seconds = (performance.now() - t0) / 1000
  return { rps: done / seconds, cpuUs: ((cpuSeconds(pid) - cpu0) / done) * 1e6 }
}

async function throughput(): Promise<void> {
  const up = await spawnChild(SELF, ['--role=upstream'], { cwd: ROOT })
  const results: Record<'on' | 'off', { plain: Run[]; stream: Run[] }> = {
    on: { plain: [], stream: [] },
    off: { plain: [], stream: [] },
  }
  try {
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate the order so neither mode always runs on a warmer machine.
      const order: ('on' | 'off')[] = round % 2 === 0 ? ['on', 'off'] : ['off', 'on']
      for (const mode of order) {
        const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-keys-'))
        const env = {
          PORT: '0',
          BIND: '127.0.0.1',
          DATA_DIR: dataDir,
          ADMIN_TOKEN: ADMIN,
          NODE1_HOST: '127.0.0.1',
          NODE1_USER: 'bench',
          LLM_PORT: String(up.info.llm),
          MONITOR_INTERVAL_S: '0',
          RATE_SOURCES: 'http://127.0.0.1:9',
        }
        const d = await spawnChild(SELF, ['--role=daemon', `--accounting=${mode}`], { cwd: ROOT, env })
        const base = String(d.info.url)
        try {
          const keys = await createKeys(base)
          const pid = d.proc.pid!
          results[mode].plain.push(await rps(base, pid, keys, false, 3000))
          results[mode].stream.push(await rps(base, pid, keys, true, 1500))
        } finally {
          d.proc.stdin!.end()
          await new Promise((r) => d.proc.once('exit', r))
          fs.rmSync(dataDir, { recursive: true, force: true })
        }
      }
    }
  } finally {
    up.proc.stdin!.end()
  }
  const mid = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  const pct = (off: number, on: number): string => `${(((off - on) / off) * 100).toFixed(1)} %`
  const cpuPct = (off: number, on: number): string => `${(((on - off) / off) * 100).toFixed(1)} %`
  console.log(
    `Gateway with ${KEYS} named keys, ${CLIENTS} clients, median of ${ROUNDS} rounds; load average ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} cores:`,
  )
  console.log('| answer | req/s off | req/s on | req/s cost | daemon CPU µs/req off | on | CPU cost |')
  console.log('|---|---|---|---|---|---|---|')
  for (const kind of ['plain', 'stream'] as const) {
    const off = { rps: mid(results.off[kind].map((r) => r.rps)), cpu: mid(results.off[kind].map((r) => r.cpuUs)) }
    const on = { rps: mid(results.on[kind].map((r) => r.rps)), cpu: mid(results.on[kind].map((r) => r.cpuUs)) }
    const label = kind === 'plain' ? 'chat, JSON' : 'completion, 50-token stream'
    console.log(
      `| ${label} | ${off.rps.toFixed(0)} | ${on.rps.toFixed(0)} | ${pct(off.rps, on.rps)} | ${off.cpu.toFixed(0)} | ${on.cpu.toFixed(0)} | ${cpuPct(off.cpu, on.cpu)} |`,
    )
  }
}

/** /metrics render time: 20 keys' gateway series, a cluster snapshot, 10,000 licences in SQLite. */
async function metricsRender(): Promise<void> {
  const { Registry } = await import('prom-client')
  const { openLicensingDb } = await import('../../src-main/licensing/db')
  const { gatewayMetrics } = await import('../../src-main/metrics/gatewayMetrics')
  const { licensingMetrics } = await import('../../src-main/metrics/licensing')
  const { clusterMetrics } = await import('../../src-main/metrics/clusterMetrics')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-metrics-'))
  const db = openLicensingDb(path.join(dir, 'licensing.sqlite'))
  const now = Date.now()
  db.transaction(() => {
    db.prepare(`INSERT INTO products (id, slug, name, created_at, updated_at) VALUES ('p1', 'app', 'App', ?, ?)`).run(
      now,
      now,
    )
    const lic = db.prepare(
      `INSERT INTO licenses (id, product_id, status, source, license_key, issued_at, expires_at, updated_at)
       VALUES (?, 'p1', ?, 'purchase', 'LIC1-X', ?, ?, ?)`,
    )
    const inv = db.prepare(
      `INSERT INTO invoices (id, product_id, amount_sats, status, created_at, updated_at, listed_currency)
       VALUES (?, 'p1', 21000, ?, ?, ?, ?)`,
    )
    for (let i = 0; i < 10_000; i++) {
      lic.run(`l${i}`, i % 10 === 0 ? 'revoked' : 'active', now, i % 7 === 0 ? now - 1 : null, now)
      inv.run(`i${i}`, i % 5 === 0 ? 'expired' : 'settled', now, now, ['SAT', 'USD', 'EUR'][i % 3])
    }
  })()
  const registry = new Registry()
  const observe = gatewayMetrics([registry], () => 3)
  licensingMetrics([registry], () => db, { now: () => Date.now() }).countValidation(true, undefined)
  clusterMetrics([registry])
  for (let k = 0; k < KEYS; k++)
    for (const route of ['/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/v1/audio/speech', '/v1/models'])
      for (const status of [200, 400, 429, 502]) {
        const entry = { path: route, status, latency_ms: 120, key: `client ${k + 1}`, placement: null }
        const usage = {
          ttft_ms: 80,
          tokens_per_s: 40,
          prompt_tokens: 10,
          completion_tokens: 100,
          tokens_estimated: false,
          audio_seconds: 0,
          speech_characters: 0,
          generation_s: 2.5,
          model: null,
        }
        observe(entry as never, usage, undefined)
      }
  const times: number[] = []
  let bytes = 0
  for (let i = 0; i < 60; i++) {
    const t0 = performance.now()
    bytes = (await registry.metrics()).length
    times.push(performance.now() - t0)
  }
  db.close()
  fs.rmSync(dir, { recursive: true, force: true })
  const s = times.slice(10).sort((a, b) => a - b)
  console.log(
    `\n/metrics render, ${KEYS} keys x 5 routes x 4 statuses, 10,000 licences and invoices (50 renders after 10 warm-up):`,
  )
  console.log(
    `median ${s[Math.floor(s.length / 2)]!.toFixed(2)} ms, p95 ${s[Math.floor(s.length * 0.95)]!.toFixed(2)} ms, ${(bytes / 1024).toFixed(0)} KiB of text`,
  )
}

/** The usage meter's own CPU per 50-token stream, in-process (steadier than wall time on a shared machine). */
async function meterCost(): Promise<void> {
  const { UsageMeter } = await import('../../src-main/gateway/relay/usageMeter')
  const { readRelayRequest } = await import('../../src-main/gateway/relay/wire')
  const chunks = Array.from({ length: 50 }, (_, i) =>
    Buffer.from(
      `data: {"id":"cmpl-sim1","object":"text_completion","created":1767225600,"model":"sim/Qwen3-8B-Instruct","choices":[{"index":0,"text":" word${i}","finish_reason":null}]}\n\n`,
    ),
  )
  chunks.push(
    Buffer.from(
      `data: {"id":"cmpl-sim1","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":50,"total_tokens":51}}\n\ndata: [DONE]\n\n`,
    ),
  )
  const raw = Buffer.from(JSON.stringify({ model: 'm', prompt: 'x', max_tokens: 50, stream: true }))
  const request = readRelayRequest(raw)
  const N = 20_000
  const c0 = process.cpuUsage()
  for (let n = 0; n < N; n++) {
    const m = new UsageMeter(0)
    m.readRequest(request)
    for (const c of chunks) m.onSseChunk(c)
    m.flushSse()
    m.result()
  }
  const u = process.cpuUsage(c0)
  console.log(
    `\nUsage meter alone: ${((u.user + u.system) / N).toFixed(1)} µs CPU per 50-token stream (usage asked for and stripped)`,
  )
}

if (role === 'upstream') await runUpstream()
else if (role === 'daemon') await runDaemon(process.argv.includes('--accounting=on'))
else {
  await metricsRender()
  await meterCost()
  await throughput()
}
