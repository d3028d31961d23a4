// Resilience bench (issue 42): the built daemon's health latency while it is attacked, against its
// own baseline in the same run, with its RSS at the peak and after each attack. The attacks:
// two sockets declaring 64 MiB chat bodies and sending one byte (they held the whole body budget
// for 300 s), one and four 60 MB chat bodies (the depth scan and JSON.parse held the event loop
// for up to 2 s), and 200 loopback addresses × 128 idle sockets (they used up the open files).
// Health p99 during each is printed against the baseline's p99 + 50 ms as met / not met, with the
// chat calls of other clients answered meanwhile. Loopback only, every loop bounded.
// Run: npm run build && npx tsx test/bench/resilience.mts
// Only some phases: --only=big (the 60 MB bodies), --only=hold,flood (names: hold, big, flood); the
// baseline always runs, and the reading cost only with every phase.
import fs from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { benchDaemonEnv, spawnBuiltDaemon, spawnChild } from './lib/child'

const SELF = fileURLToPath(import.meta.url)
const ROOT = path.resolve(path.dirname(SELF), '../..')
const role = process.argv.find((a) => a.startsWith('--role='))?.slice(7)
const MB = 2 ** 20
/** The phases asked for (--only=big,flood); empty: all of them. */
const only = (
  process.argv
    .find((a) => a.startsWith('--only='))
    ?.slice(7)
    .split(',') ?? []
).filter((x) => x !== '')
const wanted = (name: 'hold' | 'big' | 'flood'): boolean => only.length === 0 || only.includes(name)
const MODEL = 'bench'

/** Child: an llm that lists one model and answers every call once its body has arrived. */
async function runUpstream(): Promise<void> {
  const server = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' })
      if (req.method === 'GET' && req.url === '/v1/models')
        return void res.end(JSON.stringify({ object: 'list', data: [{ id: MODEL, object: 'model' }] }))
      res.end('{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant"}}]}')
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

function p99(xs: readonly number[]): number {
  if (xs.length === 0) return NaN
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(s.length * 0.99))]!
}

/**
 * Child: health from 127.0.0.1 every 20 ms on fresh connections until its stdin ends, then each
 * answer's latency (ms) into the file named by --out. A process of its own, so what the attack
 * costs the bench process (a 60 MB buffer to fill and send) is not counted as the daemon's.
 */
async function runProber(): Promise<void> {
  const base = process.argv.find((a) => a.startsWith('--base='))!.slice(7)
  const out = process.argv.find((a) => a.startsWith('--out='))!.slice(6)
  const latencies: number[] = []
  let failed = 0
  let running = true
  process.stdin.resume()
  process.stdin.on('end', () => (running = false))
  process.stdout.write('{"ready":true}\n')
  while (running) {
    const t0 = performance.now()
    const ok = await fetch(`${base}/api/health`, { headers: { connection: 'close' } }).then(
      async (r) => (await r.arrayBuffer(), r.ok),
      () => false,
    )
    if (ok) latencies.push(performance.now() - t0)
    else failed++
    await new Promise((r) => setTimeout(r, 20))
  }
  fs.writeFileSync(out, JSON.stringify({ latencies, failed }))
  process.exit(0)
}

/** Starts a prober child; `stop` ends it and reads what it measured. */
async function probeHealth(base: string): Promise<{ stop: () => Promise<{ latencies: number[]; failed: number }> }> {
  const out = path.join(os.tmpdir(), `tandem-bench-probe-${process.pid}-${Date.now()}.json`)
  const child = await spawnChild(SELF, ['--role=prober', `--base=${base}`, `--out=${out}`], { cwd: ROOT })
  return {
    stop: async () => {
      const exited = new Promise((r) => child.proc.once('exit', r))
      child.proc.stdin!.end()
      await exited
      const got = JSON.parse(fs.readFileSync(out, 'utf8')) as { latencies: number[]; failed: number }
      fs.rmSync(out, { force: true })
      return got
    },
  }
}

/** The first refusal's message of the last calls, for the figures' notes. */
let lastRefusal = ''

/** A chat POST from `localAddress` on its own connection; its status (0: the connection failed). */
function chat(base: string, body: Buffer, localAddress = '127.0.0.1'): Promise<number> {
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
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (c: string) => (text = (text + c).slice(0, 300)))
        res.on('end', () => {
          if (res.statusCode !== 200 && lastRefusal === '') lastRefusal = text
          resolve(res.statusCode ?? 0)
        })
        res.on('error', () => resolve(res.statusCode ?? 0))
      },
    )
    req.setTimeout(120_000, () => req.destroy(new Error('timeout')))
    req.on('error', () => resolve(0))
    req.end(body)
  })
}

const small = Buffer.from(JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hello' }] }))

function bigBody(size: number): Buffer {
  const head = Buffer.from(`{"model":"${MODEL}","messages":[{"role":"user","content":"`)
  const tail = Buffer.from('"}]}')
  const body = Buffer.alloc(size, 'x')
  head.copy(body, 0)
  tail.copy(body, size - tail.length)
  return body
}

interface Phase {
  readonly name: string
  readonly p99: number
  readonly max: number
  readonly healthFailed: number
  readonly peak: number
  readonly after: number
  readonly note: string
  /** The machine's 1-minute load average when the phase ended. */
  readonly load: number
}

/** Runs `attack` while health is probed and RSS sampled; `after` is RSS 5 s after it ended. */
async function phase(name: string, base: string, pid: number, attack: () => Promise<string>): Promise<Phase> {
  let peak = rssOf(pid)
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 20)
  const probe = await probeHealth(base)
  const note = await attack()
  const { latencies, failed } = await probe.stop()
  await new Promise((r) => setTimeout(r, 5000))
  clearInterval(sampler)
  return {
    name,
    p99: p99(latencies),
    max: Math.max(...latencies),
    healthFailed: failed,
    peak,
    after: rssOf(pid),
    note,
    load: os.loadavg()[0]!,
  }
}

/** Two sockets declaring 64 MiB and sending one byte, from two addresses; chat from a third meanwhile. */
async function twoSocketHold(base: string, port: number): Promise<string> {
  const sockets = ['127.0.0.2', '127.0.0.3'].map((from) => {
    const s = net.connect({ port, host: '127.0.0.1', localAddress: from })
    s.on('error', () => undefined)
    s.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${64 * MB}\r\n\r\n{`,
    )
    return s
  })
  await new Promise((r) => setTimeout(r, 300))
  const statuses: number[] = []
  for (let i = 0; i < 30; i++) statuses.push(await chat(base, small))
  for (const s of sockets) s.destroy()
  return `other clients' chat: ${statuses.filter((s) => s === 200).length}/30 answered 200`
}

/** Built once, before any phase: filling 60 MB costs the bench process ~300 ms of page faults here. */
let body60: Buffer | null = null

async function bigBodies(base: string, n: number): Promise<string> {
  const body = (body60 ??= bigBody(60_000_000))
  lastRefusal = ''
  const statuses = await Promise.all(Array.from({ length: n }, (_, i) => chat(base, body, `127.0.0.${10 + i}`)))
  return `answers: ${statuses.join(', ')}${lastRefusal === '' ? '' : ` (first refusal: ${lastRefusal.slice(0, 160)})`}`
}

/** 200 addresses × 128 sockets, held for 3 s, then closed. */
async function flood(port: number): Promise<string> {
  const held: net.Socket[] = []
  let closedByServer = 0
  for (let a = 0; a < 200; a += 4) {
    const opens: Promise<void>[] = []
    for (let n = a; n < a + 4; n++)
      for (let k = 0; k < 128; k++)
        opens.push(
          new Promise((resolve) => {
            const s = net.connect({ port, host: '127.0.0.1', localAddress: `127.0.${1 + (n >> 8)}.${1 + (n & 255)}` })
            s.on('error', () => resolve())
            s.once('close', () => closedByServer++)
            s.once('connect', () => {
              held.push(s)
              resolve()
            })
          }),
        )
    await Promise.all(opens)
  }
  await new Promise((r) => setTimeout(r, 3000))
  const open = held.length - closedByServer
  for (const s of held) s.destroy()
  return `${held.length} connected, ${open} still held by the server at the end`
}

/**
 * What reading a body costs the main thread now (the budget charged per chunk; a small body parsed
 * inline, a large one copied to the parser's worker) against the depth scan and JSON.parse of the
 * whole body on the main thread before: the added cost per-byte charging brings to the 64 paced
 * streams of gateway.mts, and what a 60 MB body still costs the loop.
 */
async function readingCost(): Promise<string[]> {
  const { readRelayRequest, parseJsonObject, GATEWAY_JSON_DEPTH } = await import('../../src-main/gateway/relay/wire')
  const { RelayBodyParser, sharedBody } = await import('../../src-main/gateway/relay/relayBodyParser')
  const { giveBackChunk } = await import('../../src-main/gateway/relay/arrivingBody')
  const { BodyBudget, bodyBudgetLimits, bodyCost } = await import('../../src-main/gateway/relay/bodyBudget')
  const paced = Buffer.from(JSON.stringify({ model: MODEL, prompt: 'x', max_tokens: 100, stream: true }))
  const budget = new BodyBudget(bodyBudgetLimits(256 * MB))
  const time = (n: number, fn: () => void): number => {
    for (let i = 0; i < Math.min(n, 1000); i++) fn()
    const t0 = performance.now()
    for (let i = 0; i < n; i++) fn()
    return ((performance.now() - t0) * 1000) / n
  }
  const now = time(100_000, () => {
    const r = budget.open(['address a'])
    r.charge(bodyCost(paced.length))
    readRelayRequest(paced)
    r.release()
  })
  const before = time(100_000, () => {
    const b = parseJsonObject(paced)
    void (b.model, b.stream)
  })
  const big = bigBody(60_000_000)
  const parser = new RelayBodyParser({ maxDepth: GATEWAY_JSON_DEPTH, timeoutMs: 60_000 })
  // What the main thread does for each of a 60 MB body's 64 KiB chunks: charge it, copy it into the
  // body's buffer and give its memory back; into fresh memory the toucher faults in meanwhile (now),
  // or into fresh memory alone.
  const arrive = async (touched: boolean): Promise<{ ms: number; worst: number }> => {
    const r = budget.open(['address b'])
    const into = sharedBody(big.length)
    if (touched) void parser.touch(into)
    let worst = 0
    const t0 = performance.now()
    for (let at = 0; at < big.length; at += 64 * 1024) {
      const c0 = performance.now()
      const chunk = Buffer.from(big.subarray(at, at + 64 * 1024))
      r.charge(bodyCost(chunk.length))
      chunk.copy(into, at)
      giveBackChunk(chunk)
      worst = Math.max(worst, performance.now() - c0)
    }
    r.release()
    return { ms: performance.now() - t0, worst }
  }
  const fresh = await arrive(false)
  const touched = await arrive(true)
  parser.close()
  const whole = time(3, () => void parseJsonObject(big))
  return [
    `reading a paced stream's body (${paced.length} B): ${now.toFixed(2)} µs a request now (budget charged + inline parse), ${before.toFixed(2)} µs with the parse alone before`,
    `a 60 MB body's chunks charged and copied on the main thread: ${touched.ms.toFixed(0)} ms (worst chunk ${touched.worst.toFixed(1)} ms) into fresh memory the toucher faults in meanwhile, ${fresh.ms.toFixed(0)} ms (worst chunk ${fresh.worst.toFixed(1)} ms) into fresh memory alone; ${(whole / 1000).toFixed(0)} ms of depth scan and JSON.parse on it before the worker`,
  ]
}

function line(p: Phase, baseline: Phase): string {
  const verdict = p.p99 <= baseline.p99 + 50 ? 'met' : 'not met'
  return (
    `${p.name}: health p99 ${p.p99.toFixed(1)} ms, max ${p.max.toFixed(1)} ms, ${p.healthFailed} failed ` +
    `[target p99 ≤ baseline + 50 ms = ${(baseline.p99 + 50).toFixed(1)} ms: ${verdict}]; ` +
    `RSS peak ${(p.peak / MB).toFixed(0)} MB, 5 s after ${(p.after / MB).toFixed(0)} MB; load average ${p.load.toFixed(1)}; ${p.note}`
  )
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-resilience-'))
  const upstream = await spawnChild(SELF, ['--role=upstream'], { cwd: ROOT })
  const env = {
    ...(await benchDaemonEnv(upstream.info.llm as number, 9, dataDir)),
    GATEWAY_BODY_BUDGET_MB: '256',
    GATEWAY_BODY_IDLE_S: '10',
  }
  const tandem = await spawnBuiltDaemon(ROOT, env)
  const base = tandem.info.url
  const port = Number(new URL(base).port)
  const pid = tandem.proc.pid!
  try {
    for (let i = 0; i < 50 && (await chat(base, small)) !== 200; i++) await new Promise((r) => setTimeout(r, 100))
    body60 = bigBody(60_000_000)
    const baseline = await phase('baseline (no attack, 10 s)', base, pid, async () => {
      await new Promise((r) => setTimeout(r, 10_000))
      return 'nothing else'
    })
    const phases: Phase[] = []
    if (wanted('hold'))
      phases.push(await phase('two sockets holding 64 MiB bodies', base, pid, () => twoSocketHold(base, port)))
    if (wanted('big')) {
      phases.push(await phase('one 60 MB body (the first: a fresh buffer)', base, pid, () => bigBodies(base, 1)))
      // The daemon keeps a large body's buffer for the next one (relay/bodyBuffers.ts): a running daemon's case.
      phases.push(await phase('one 60 MB body again (its buffer reused)', base, pid, () => bigBodies(base, 1)))
      phases.push(await phase('four parallel 60 MB bodies', base, pid, () => bigBodies(base, 4)))
    }
    if (wanted('flood')) phases.push(await phase('200 addresses × 128 sockets', base, pid, () => flood(port)))
    console.log(
      [
        `resilience: measured ${new Date().toISOString().slice(0, 16)}Z on ${os.cpus().length} cores, Node ${process.version}; GATEWAY_BODY_BUDGET_MB=256, GATEWAY_BODY_IDLE_S=10.`,
        `baseline: health p99 ${baseline.p99.toFixed(1)} ms, max ${baseline.max.toFixed(1)} ms; RSS ${(baseline.after / MB).toFixed(0)} MB; load average ${baseline.load.toFixed(1)}`,
        ...phases.map((p) => line(p, baseline)),
        ...(only.length === 0 ? await readingCost() : []),
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
else if (role === 'prober') await runProber()
else await main()
