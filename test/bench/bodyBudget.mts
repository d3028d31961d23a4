// Body budget bench (issue 33 #1): chat bodies of 60 MB each were held in memory with nothing
// bounding their sum (16 in parallel took the daemon from 209 MB to 1.85 GB). This sends 16
// parallel 60 MB bodies to the built daemon's /v1/chat/completions, in front of a fake llm on
// loopback, from one client address and then from 16 (127.0.0.1 to 127.0.0.16), and prints the
// daemon's RSS before, at its peak and 20 s after each round and the answers by status, with two
// targets printed as met / not met: peak ≤ baseline + budget + 100 MB; back within 50 MB of the
// baseline 20 s after the round.
// Loopback only, every loop bounded.
// Run: npm run build && npx tsx test/bench/bodyBudget.mts
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { benchDaemonEnv, spawnBuiltDaemon, spawnChild } from './lib/child'

const SELF = fileURLToPath(import.meta.url)
const ROOT = path.resolve(path.dirname(SELF), '../..')
const role = process.argv.find((a) => a.startsWith('--role='))?.slice(7)
const MB = 2 ** 20
const BODY_BYTES = 60_000_000
const PARALLEL = 16
const SETTLE_MS = 20_000
/** The budget the daemon runs with (GATEWAY_BODY_BUDGET_MB). */
const BUDGET_MB = 256

/** Child: an llm that reads each body to its end and answers a small completion at once. */
async function runUpstream(): Promise<void> {
  const server = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(
        '{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}',
      )
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  process.stdout.write(JSON.stringify({ llm: (server.address() as { port: number }).port }) + '\n')
  process.stdin.resume()
  process.stdin.on('end', () => process.exit(0))
}

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))
  return Number(m?.[1] ?? 0) * 1024
}

/** A chat body of exactly `size` bytes: one user message of `x`s. */
function chatBody(size: number): Buffer {
  const head = Buffer.from('{"model":"bench","messages":[{"role":"user","content":"')
  const tail = Buffer.from('"}]}')
  const body = Buffer.alloc(size, 'x')
  head.copy(body, 0)
  tail.copy(body, size - tail.length)
  return body
}

/** One POST on a connection of its own from `localAddress`; resolves with its status (0: the connection failed). */
function post(base: string, body: Buffer, localAddress: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request(
      `${base}/v1/chat/completions`,
      {
        method: 'POST',
        agent: false,
        localAddress,
        headers: { 'content-type': 'application/json', 'content-length': body.length },
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
        res.on('error', () => resolve(res.statusCode ?? 0))
      },
    )
    req.setTimeout(120_000, () => req.destroy(new Error('timeout')))
    // A refused body is answered before it is all sent; the daemon may then close the connection.
    req.on('error', () => resolve(0))
    req.end(body)
  })
}

interface Round {
  readonly name: string
  readonly before: number
  readonly peak: number
  readonly after: number
  readonly statuses: Map<number, number>
  readonly seconds: number
}

async function round(name: string, base: string, pid: number, body: Buffer, addresses: string[]): Promise<Round> {
  const before = rssOf(pid)
  let peak = before
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 20)
  const t0 = performance.now()
  const codes = await Promise.all(
    Array.from({ length: PARALLEL }, (_, i) => post(base, body, addresses[i % addresses.length]!)),
  )
  const seconds = (performance.now() - t0) / 1000
  const until = Date.now() + SETTLE_MS
  while (Date.now() < until) await new Promise((r) => setTimeout(r, 250))
  clearInterval(sampler)
  const after = rssOf(pid)
  const statuses = new Map<number, number>()
  for (const c of codes) statuses.set(c, (statuses.get(c) ?? 0) + 1)
  return { name, before, peak: Math.max(peak, after), after, statuses, seconds }
}

/** One round's figures against the daemon's baseline before any load, with the two targets. */
function line(r: Round, baseline: number): string {
  const growth = (r.peak - baseline) / MB
  const back = (r.after - baseline) / MB
  const verdict = (ok: boolean): string => (ok ? 'met' : 'not met')
  const statuses = [...r.statuses].map(([s, n]) => `${n}× ${s === 0 ? 'cut' : s}`).join(', ')
  return (
    `${r.name}: ${statuses} in ${r.seconds.toFixed(1)} s; RSS at start ${(r.before / MB).toFixed(0)} MB, ` +
    `peak ${(r.peak / MB).toFixed(0)} MB, ${SETTLE_MS / 1000} s later ${(r.after / MB).toFixed(0)} MB. ` +
    `Peak ${growth.toFixed(0)} MB over the baseline [target ≤ budget + 100 MB: ${verdict(growth <= BUDGET_MB + 100)}]; ` +
    `${back.toFixed(0)} MB over it after ${SETTLE_MS / 1000} s [target ≤ 50 MB: ${verdict(back <= 50)}]`
  )
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-body-budget-'))
  const upstream = await spawnChild(SELF, ['--role=upstream'], { cwd: ROOT })
  const env = {
    ...(await benchDaemonEnv(upstream.info.llm as number, 9, dataDir)),
    GATEWAY_BODY_BUDGET_MB: String(BUDGET_MB),
  }
  const tandem = await spawnBuiltDaemon(ROOT, env)
  const base = tandem.info.url
  const pid = tandem.proc.pid!
  try {
    // Warm the relay up with small bodies, then let the daemon settle before the baseline.
    for (let i = 0; i < 20; i++) await post(base, chatBody(10_000), '127.0.0.1')
    await new Promise((r) => setTimeout(r, 3000))
    const baseline = rssOf(pid)
    const body = chatBody(BODY_BYTES)
    const one = await round('16 × 60 MB from one address', base, pid, body, ['127.0.0.1'])
    process.stderr.write(`${line(one, baseline)}\n`)
    const many = await round(
      '16 × 60 MB from 16 addresses',
      base,
      pid,
      body,
      Array.from({ length: PARALLEL }, (_, i) => `127.0.0.${i + 1}`),
    )
    console.log(
      [
        `body budget: measured ${new Date().toISOString().slice(0, 16)}Z on ${os.cpus().length} cores, Node ${process.version}; GATEWAY_BODY_BUDGET_MB=${BUDGET_MB} (one address or key: half).`,
        `Baseline RSS after warm-up: ${(baseline / MB).toFixed(0)} MB.`,
        line(one, baseline),
        line(many, baseline),
      ].join('\n'),
    )
  } finally {
    tandem.proc.kill('SIGTERM')
    await new Promise((r) => tandem.proc.once('exit', r))
    upstream.proc.stdin!.end()
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

// Dispatch last: everything above is initialised by now.
if (role === 'upstream') await runUpstream()
else await main()
