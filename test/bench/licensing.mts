// Licensing bench (issue 5): with 10,000 licenses in the database, POST /v1/validate requests per
// second and p50/p99 latency at 16 concurrent clients over real HTTP on loopback. The daemon is the
// built one (`npm run bench` builds first), in a child process so the load generator does not share
// its event loop. Runs: a plain validate (signature + database lookup), first for every key and
// then in steady state; and one with a fingerprint, every key's seat taken by a first pass (one
// write each), then validated again with the seat held (read-only within a minute).
// Every call is recorded in the validation log (written in batches off the request path); the
// bench prints how many rows the log holds afterwards, so a run with the log silently off shows.
// Target: ≥ 3,000 requests per second and p99 < 10 ms. Run: npx tsx test/bench/licensing.mts
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { freePort, spawnBuiltDaemon } from './lib/child'

const SELF = fileURLToPath(import.meta.url)
const ROOT = path.resolve(path.dirname(SELF), '../..')
const LICENSES = 10_000
const CLIENTS = 16
const WARMUP_MS = 1_500
const MEASURE_MS = 6_000

/** Fills DATA_DIR with one product and 10,000 licenses through the real services; returns their keys. */
async function seed(dataDir: string): Promise<string[]> {
  const { loadConfig } = await import('../../src-main/config/load')
  const { createLogger, MemorySink } = await import('../../src-main/lib/logger')
  const { systemClock } = await import('../../src-main/lib/clock')
  const { testCoreDeps } = await import('../helpers/coreDeps')
  const { createLicensingServices } = await import('../../src-main/licensing/licensingServices')
  const { ProductInput, PolicyInput } = await import('../../src-main/contract/licensing')
  const logger = createLogger({ sink: new MemorySink() })
  const config = loadConfig({ env: { DATA_DIR: dataDir, RATE_SOURCES: 'http://127.0.0.1:9' } })
  const s = createLicensingServices(testCoreDeps({ config, clock: systemClock, logger }))
  const p = s.catalog.createProduct(ProductInput.parse({ slug: 'bench', name: 'Bench', price_value: 10_000 }))
  const pol = s.catalog.createPolicy(
    p.id,
    PolicyInput.parse({ slug: 'team', name: 'Team', max_machines: 0, entitlements: ['pro', 'sync'] }),
  )
  const product = s.catalog.productRow(p.id)!
  const policy = s.catalog.policyRow(pol.id)!
  const keys: string[] = []
  s.db.transaction(() => {
    for (let i = 0; i < LICENSES; i++)
      keys.push(
        s.licenses.issuing.issue({ product, policy, source: 'complimentary', buyerEmail: `b${i}@example.com` }).key,
      )
  })()
  s.close()
  return keys
}

/**
 * One keep-alive connection speaking just enough HTTP/1.1 for this bench (one request in flight,
 * Content-Length bodies): far cheaper than http.Agent, so the load generator, which shares the
 * machine's cores with the daemon, takes as little CPU as it can.
 */
class Conn {
  private buf: Buffer = Buffer.alloc(0)
  private waiting: ((r: { status: number; text: string }) => void) | null = null
  private readonly sock: net.Socket

  constructor(url: URL) {
    this.sock = net.connect(Number(url.port), url.hostname)
    this.sock.setNoDelay(true)
    this.sock.on('data', (c: Buffer) => {
      this.buf = this.buf.length === 0 ? c : Buffer.concat([this.buf, c])
      this.drain()
    })
  }

  private drain(): void {
    const head = this.buf.indexOf('\r\n\r\n')
    if (head < 0 || !this.waiting) return
    const headers = this.buf.subarray(0, head).toString('latin1')
    const len = Number(/content-length:\s*(\d+)/i.exec(headers)?.[1] ?? 0)
    if (this.buf.length < head + 4 + len) return
    const text = this.buf.subarray(head + 4, head + 4 + len).toString()
    this.buf = this.buf.subarray(head + 4 + len)
    const done = this.waiting
    this.waiting = null
    done({ status: Number(headers.slice(9, 12)), text })
  }

  post(path: string, body: string): Promise<{ status: number; text: string }> {
    return new Promise((resolve) => {
      this.waiting = resolve
      this.sock.write(
        `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      )
    })
  }

  close(): void {
    this.sock.destroy()
  }
}

type Figures = { rps: number; p50: number; p99: number; n: number; errors: number; all: number }

/** `bodies` once each, spread over the clients: the first validation of every key (no warm-up). */
async function onePass(base: string, bodies: string[]): Promise<Figures> {
  const conns = Array.from({ length: CLIENTS }, () => new Conn(new URL(base)))
  const latencies: number[] = []
  let errors = 0
  let i = 0
  const t0 = Date.now()
  const worker = async (conn: Conn): Promise<void> => {
    while (i < bodies.length) {
      const body = bodies[i++]!
      const s = process.hrtime.bigint()
      const res = await conn.post('/v1/validate', body)
      latencies.push(Number(process.hrtime.bigint() - s) / 1e6)
      if (res.status !== 200 || !res.text.startsWith('{"ok":true')) errors++
    }
  }
  await Promise.all(conns.map(worker))
  for (const c of conns) c.close()
  return figures(latencies, (Date.now() - t0) / 1000, errors)
}

function figures(latencies: number[], seconds: number, errors: number, all = latencies.length): Figures {
  latencies.sort((a, b) => a - b)
  const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!
  return { rps: latencies.length / seconds, p50: q(0.5), p99: q(0.99), n: latencies.length, errors, all }
}

async function load(base: string, bodies: string[]): Promise<Figures> {
  const conns = Array.from({ length: CLIENTS }, () => new Conn(new URL(base)))
  const latencies: number[] = []
  let errors = 0
  let measuring = false
  let stop = false
  let all = 0
  let i = 0
  const worker = async (conn: Conn): Promise<void> => {
    while (!stop) {
      const body = bodies[i++ % bodies.length]!
      const t0 = process.hrtime.bigint()
      const res = await conn.post('/v1/validate', body)
      all++
      const ms = Number(process.hrtime.bigint() - t0) / 1e6
      if (res.status !== 200 || !res.text.startsWith('{"ok":true')) errors++
      if (measuring) latencies.push(ms)
    }
  }
  const workers = conns.map(worker)
  await new Promise((r) => setTimeout(r, WARMUP_MS))
  measuring = true
  const t0 = Date.now()
  await new Promise((r) => setTimeout(r, MEASURE_MS))
  measuring = false
  const elapsed = (Date.now() - t0) / 1000
  stop = true
  await Promise.all(workers)
  for (const c of conns) c.close()
  return figures(latencies, elapsed, errors, all)
}

/** CPU time (user + system) a process has used, in ms, from /proc (clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

async function withCpu(pid: number, run: () => Promise<Figures>): Promise<Figures & { cpuUs: number }> {
  const c0 = cpuMs(pid)
  const r = await run()
  return { ...r, cpuUs: ((cpuMs(pid) - c0) * 1000) / r.all }
}

/** What the validation log holds once the daemon has stopped (it writes what is waiting on the way out). */
function printValidationLog(dataDir: string, sent: number): void {
  const db = new Database(path.join(dataDir, 'licensing.sqlite'), { readonly: true })
  const rows = (db.prepare('SELECT count(*) AS n FROM validation_log').get() as { n: number }).n
  const counted = (db.prepare('SELECT sum(count) AS n FROM validation_daily').get() as { n: number | null }).n ?? 0
  db.close()
  console.log(`validation log: ${rows} rows for ${sent} validate calls sent (per-day counts: ${counted})`)
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-lic-'))
  try {
    const t0 = Date.now()
    const keys = await seed(dataDir)
    console.log(`seeded ${keys.length} licenses in ${((Date.now() - t0) / 1000).toFixed(1)} s`)
    const port = await freePort()
    const { proc, info } = await spawnBuiltDaemon(ROOT, {
      DATA_DIR: dataDir,
      PORT: String(port),
      BIND: '127.0.0.1',
      LICENSING_RATE_LIMIT: '0',
      RATE_SOURCES: 'http://127.0.0.1:9',
    })
    const url = info.url as string
    let sent: number
    try {
      const plain = keys.map((key) => JSON.stringify({ key, product_slug: 'bench' }))
      const withFp = keys.map((key, n) => JSON.stringify({ key, product_slug: 'bench', fingerprint: `machine-${n}` }))
      const pid = proc.pid!
      // BENCH_STEADY_ONLY=1 (with BENCH_CPU_PROF) profiles the steady run alone.
      const steadyOnly = process.env.BENCH_STEADY_ONLY === '1'
      const cold = steadyOnly ? null : await withCpu(pid, () => onePass(url, plain))
      const rows: [string, Figures & { cpuUs: number }][] = [
        ['validate, steady state', await withCpu(pid, () => load(url, plain))],
      ]
      if (cold) {
        rows.push(['validate, first call per key (signature verified, nothing cached)', cold])
        // Every key once with a fingerprint (its seat taken: one write each), then again (seat held: read-only).
        rows.push(['validate + fingerprint, first call (a seat taken)', await withCpu(pid, () => onePass(url, withFp))])
        rows.push(['validate + fingerprint, seat held (read-only)', await withCpu(pid, () => load(url, withFp))])
      }
      console.log(
        `\nPOST /v1/validate, ${LICENSES} licenses, ${CLIENTS} concurrent clients, ${os.cpus().length} cores (load generator on the same machine), ${MEASURE_MS / 1000} s per steady run`,
      )
      console.log(
        `load average at the start: ${os.loadavg()[0]!.toFixed(2)} (other work on the machine slows every figure)`,
      )
      console.log('| run | requests/s | p50 ms | p99 ms | requests | errors | daemon CPU µs/request |')
      console.log('|---|---:|---:|---:|---:|---:|---:|')
      for (const [name, r] of rows)
        console.log(
          `| ${name} | ${r.rps.toFixed(0)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.n} | ${r.errors} | ${r.cpuUs.toFixed(0)} |`,
        )
      const main = rows[0]![1]
      console.log(`\ntarget ≥ 3000 rps and p99 < 10 ms: ${main.rps >= 3000 && main.p99 < 10 ? 'met' : 'NOT met'}`)
      sent = rows.reduce((n, [, r]) => n + r.all, 0)
    } finally {
      const exited = new Promise((r) => proc.once('exit', r))
      proc.kill('SIGTERM')
      await exited
    }
    printValidationLog(dataDir, sent)
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
