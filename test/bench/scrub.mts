// Scrub bench (issue 8): time to scrub 0.25, 1 and 4 MB of dense findings, called directly (4 MB
// only this way: HTTP refuses the body) and through the daemon's HTTP API; and /api/health latency
// while 1 MB scrubs run through HTTP (the daemon must stay responsive). Prints figures, asserts
// nothing; target: 1 MB in < 200 ms. Then (issue 33 #10) what the daemon keeps after 240 scrubs
// of 1 MB, 6 at a time: RSS at the baseline, at the peak and a minute after the load, with the
// target "back within 100 MB of the baseline" printed as met / not met. Loopback only, every loop
// bounded.
// Run: npm run build && npx tsx test/bench/scrub.mts   (--retention: only the RSS part)
import type { ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort, runDaemonChild, spawnBuiltDaemon, spawnChild } from './lib/child'

const SELF = fileURLToPath(import.meta.url)
const ROOT = path.resolve(path.dirname(SELF), '../..')
const role = process.argv.find((a) => a.startsWith('--role='))?.slice(7)
const RUNS = Number(process.env.RUNS ?? 5)
const MB = 1_000_000

/** Distinct short e-mail addresses, space separated: the input that froze the daemon; `seed` makes each text's own. */
function emails(chars: number, seed = ''): string {
  const out: string[] = []
  let n = 0
  for (let i = 0; n < chars; i++) {
    const e = `u${seed}${i.toString(36)}@x.io`
    out.push(e)
    n += e.length + 1
  }
  return out.join(' ').slice(0, chars)
}

/** Every detector's kind of finding, a few words apart, with distinct values. */
function mixed(chars: number): string {
  const parts: string[] = []
  let n = 0
  for (let i = 0; n < chars; i++) {
    const d = String(i % 10_000).padStart(4, '0')
    const unit = [
      `ana${i}@example.com`,
      `+1 415 555 ${d}`,
      `10.${i % 250}.${(i >> 8) % 250}.1`,
      '4111 1111 1111 1111',
      'DE89 3704 0044 0532 0130 00',
      `ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234${d.slice(0, 4)}`,
      `fe80::1ff:fe23:${d}:890a`,
    ][i % 7]!
    parts.push(`${unit} in the note`)
    n += unit.length + 12
  }
  return parts.join(' ').slice(0, chars)
}

const sorted = (xs: number[]): number[] => [...xs].sort((a, b) => a - b)
const pct = (xs: number[], p: number): number => sorted(xs)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? NaN
const median = (xs: number[]): number => pct(xs, 0.5)

async function direct(): Promise<string[]> {
  const { ScrubSessions, detect } = await import('../../src-main/gateway/scrub/scrub')
  const { systemClock } = await import('../../src-main/lib/clock')
  const rows: string[] = []
  for (const [name, make] of [
    ['short e-mails', emails],
    ['mixed kinds', mixed],
  ] as const) {
    for (const size of [0.25, 1, 4]) {
      const text = make(size * MB)
      const findings = detect(text).length
      // 4 MB of distinct values is more than one session may hold over HTTP; the bench lifts the cap.
      const sessions = new ScrubSessions(systemClock, [], 60_000, 100, { maxPlaceholdersPerSession: 10 * MB })
      const sliced: number[] = []
      const whole: number[] = []
      for (let r = 0; r < RUNS; r++) {
        let t = performance.now()
        await sessions.scrub(text)
        sliced.push(performance.now() - t)
        t = performance.now()
        detect(text)
        whole.push(performance.now() - t)
      }
      rows.push(
        `| ${name} | ${size} | ${findings} | ${median(sliced).toFixed(0)} | ${median(whole).toFixed(0)} | direct |`,
      )
      process.stderr.write(`${rows.at(-1)}\n`)
    }
  }
  return rows
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 8 })

/** One request; the answer body is counted and dropped (parsing it would load this process, not the daemon). */
function request(base: string, p: string, body?: string): Promise<{ status: number; ms: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    const req = http.request(
      base + p,
      {
        method: body === undefined ? 'GET' : 'POST',
        agent,
        headers:
          body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let bytes = 0
        res.on('data', (c: Buffer) => (bytes += c.length))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0, bytes }))
        res.on('error', reject)
      },
    )
    req.setTimeout(60_000, () => req.destroy(new Error('timeout')))
    req.on('error', reject)
    req.end(body)
  })
}

/** /api/health one request after another until `until` settles (bounded by count). */
async function healthWhile(base: string, until: Promise<unknown>): Promise<number[]> {
  let done = false
  void until.finally(() => (done = true))
  const ms: number[] = []
  while (!done && ms.length < 100_000) ms.push((await request(base, '/api/health')).ms)
  return ms
}

/** The daemon in a child of its own, with a fresh DATA_DIR. */
async function startTandem(): Promise<{ proc: ChildProcess; base: string; dataDir: string }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-scrub-'))
  const tandem = await spawnChild(SELF, ['--role=tandem'], {
    cwd: ROOT,
    env: {
      PORT: String(await freePort()),
      BIND: '127.0.0.1',
      DATA_DIR: dataDir,
      RATE_SOURCES: 'http://127.0.0.1:9',
      LOG_LEVEL: 'warn',
    },
  })
  return { proc: tandem.proc, base: tandem.info.url as string, dataDir }
}

async function stopTandem(t: { proc: ChildProcess; dataDir: string }): Promise<void> {
  t.proc.stdin!.end()
  await new Promise((r) => t.proc.once('exit', r))
  fs.rmSync(t.dataDir, { recursive: true, force: true })
}

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))
  return Number(m?.[1] ?? 0) * 1024
}

const RETENTION_SCRUBS = 240
const RETENTION_PARALLEL = 6
const RETENTION_SETTLE_MS = 60_000
const RETENTION_WATCH_MS = 240_000

/** 240 scrubs of 1 MB (each text its own addresses), 6 at a time, on the built daemon; RSS before, at the peak, and a minute after. */
async function retention(): Promise<string[]> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-scrub-'))
  const env = {
    PORT: String(await freePort()),
    BIND: '127.0.0.1',
    DATA_DIR: dataDir,
    RATE_SOURCES: 'http://127.0.0.1:9',
  }
  const built = await spawnBuiltDaemon(ROOT, { ...env, LOG_LEVEL: 'warn' })
  const tandem = { proc: built.proc, base: built.info.url, dataDir }
  const pid = tandem.proc.pid!
  try {
    for (let i = 0; i < 20; i++) await request(tandem.base, '/scrub', JSON.stringify({ text: 'mail a@x.io' }))
    await new Promise((r) => setTimeout(r, 3000))
    const before = rssOf(pid)
    let peak = before
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 50)
    const statuses = new Map<number, number>()
    let next = 0
    const t0 = performance.now()
    const worker = async (): Promise<void> => {
      while (next < RETENTION_SCRUBS) {
        const body = JSON.stringify({ text: emails(MB, `${(next++).toString(36)}x`) })
        const { status } = await request(tandem.base, '/scrub', body)
        statuses.set(status, (statuses.get(status) ?? 0) + 1)
      }
    }
    await Promise.all(Array.from({ length: RETENTION_PARALLEL }, worker))
    const seconds = (performance.now() - t0) / 1000
    const until = Date.now() + RETENTION_SETTLE_MS
    while (Date.now() < until) await new Promise((r) => setTimeout(r, 250))
    clearInterval(sampler)
    const after = rssOf(pid)
    // Then, for the record, when (within 5 minutes) it comes back, if it does.
    const watchUntil = Date.now() + RETENTION_WATCH_MS
    let later = after
    while (Date.now() < watchUntil && later - before > 100 * 2 ** 20) {
      await new Promise((r) => setTimeout(r, 1000))
      later = rssOf(pid)
    }
    const laterS = (RETENTION_SETTLE_MS + RETENTION_WATCH_MS - Math.max(0, watchUntil - Date.now())) / 1000
    const mb = (n: number): string => (n / 2 ** 20).toFixed(0)
    const back = (after - before) / 2 ** 20
    return [
      '',
      `${RETENTION_SCRUBS} scrubs of 1 MB through HTTP, ${RETENTION_PARALLEL} at a time (${[...statuses].map(([s, n]) => `${n}× ${s}`).join(', ')} in ${seconds.toFixed(0)} s): ` +
        `RSS ${mb(before)} MB before, peak ${mb(peak)} MB, ${mb(after)} MB ${RETENTION_SETTLE_MS / 1000} s after the load ` +
        `(${back >= 0 ? '+' : ''}${back.toFixed(0)} MB) [target: back within 100 MB of the baseline: ${back <= 100 ? 'met' : 'not met'}]; ` +
        `${mb(later)} MB ${laterS.toFixed(0)} s after it.`,
    ]
  } finally {
    tandem.proc.kill('SIGTERM')
    await new Promise((r) => tandem.proc.once('exit', r))
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

async function overHttp(): Promise<string[]> {
  const tandem = await startTandem()
  const base = tandem.base
  const rows: string[] = []
  try {
    for (const size of [0.25, 1, 4]) {
      const text = emails(size * MB)
      const body = JSON.stringify({ text })
      const runs: { status: number; ms: number; bytes: number }[] = []
      for (let r = 0; r < RUNS; r++) runs.push(await request(base, '/scrub', body))
      const statuses = [...new Set(runs.map((r) => r.status))].join('/')
      rows.push(
        `| short e-mails | ${size} | HTTP ${statuses}, answer ${(runs[0]!.bytes / MB).toFixed(1)} MB | ${median(runs.map((r) => r.ms)).toFixed(0)} | | through HTTP |`,
      )
      process.stderr.write(`${rows.at(-1)}\n`)
    }
    const idle: number[] = []
    for (let i = 0; i < 500; i++) idle.push((await request(base, '/api/health')).ms)
    const body = JSON.stringify({ text: emails(MB) })
    const busy: number[] = []
    const scrubs: number[] = []
    for (let r = 0; r < RUNS; r++) {
      const scrub = request(base, '/scrub', body)
      busy.push(...(await healthWhile(base, scrub)))
      scrubs.push((await scrub).ms)
    }
    rows.push(
      '',
      `/api/health while idle: p50 ${median(idle).toFixed(2)} ms, p99 ${pct(idle, 0.99).toFixed(2)} ms (${idle.length} requests).`,
      `/api/health while ${RUNS} scrubs of 1 MB ran through HTTP (median ${median(scrubs).toFixed(0)} ms each): p50 ${median(busy).toFixed(2)} ms, p99 ${pct(busy, 0.99).toFixed(2)} ms, max ${Math.max(...busy).toFixed(2)} ms (${busy.length} requests) [target p99 < 100 ms].`,
    )
  } finally {
    await stopTandem(tandem)
  }
  return rows
}

async function main(): Promise<void> {
  if (process.argv.includes('--retention')) {
    console.log((await retention()).join('\n').trim())
    agent.destroy()
    return
  }
  const loadBefore = os.loadavg()[0]!
  const rows = [...(await direct()), ...(await overHttp()), ...(await retention())]
  agent.destroy()
  console.log(
    [
      `scrub: measured ${new Date().toISOString().slice(0, 16)}Z on ${os.cpus().length} cores, Node ${process.version}; median of ${RUNS} runs; load average before ${loadBefore.toFixed(1)}.`,
      '',
      '| text | MB | findings | scrub ms (sliced, as served) | detect ms (at once) | how |',
      '|---|---|---|---|---|---|',
      ...rows,
    ].join('\n'),
  )
}

// Dispatch last: everything above is initialised by now.
if (role === 'tandem') await runDaemonChild()
else await main()
