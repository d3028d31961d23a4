// Gateway bench (issue 30): what an LLM client feels through Tandem, beside Debian's nginx and the
// Node floor (Node's HTTP server relaying through undici's Pool, doing nothing else), all in front
// of the same fake llm: non-stream requests per second and latency; 64 streams paced like a real
// engine (50 ms to the first token, then 100 tokens at 20 ms each) with time to first token, the
// gaps between chunks and each proxy's CPU per 1,000 relayed chunks; a 200 MB upload through
// /v1/audio/transcriptions with Tandem's peak RSS growth; /v1/validate's rate; the scrub corpus's
// precision and recall; and the source lines of src-main/gateway and src-main/http. Loopback only,
// every loop bounded; targets are printed as met / not met, never asserted.
// Run: npx tsx test/bench/gateway.mts   (writes the tables into docs/benchmarks.md, Gateway section)
//      npx tsx test/bench/gateway.mts --profile   (Tandem and the Node floor under --cpu-prof: where a
//      relayed request's CPU time goes, written into docs/gateway-profile.md)
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { benchDaemonEnv, freePort, runDaemonChild, spawnBuiltDaemon, spawnChild, spawnTranspiled } from './lib/child'
import { profileOf, summarizeProfile, type ProfileSummary } from './lib/cpuProfile'

const SELF = fileURLToPath(import.meta.url)
const ROOT = path.resolve(path.dirname(SELF), '../..')
const role = process.argv.find((a) => a.startsWith('--role='))?.slice(7)

/** Child: the Node floor (Node's HTTP server and undici's Pool, nothing of Tandem's). */
async function runBareProxy(): Promise<void> {
  const { runBareProxyRole } = await import('./lib/bareProxy')
  await runBareProxyRole()
}

/** A paced engine: 50 ms to the first token (30 ms prefill, then the first chunk's 20 ms), then one token per 20 ms. */
const PREFILL_MS = 30
const TOKEN_MS = 20
const PACED_TOKENS = 100

/** Child: the fake llm (paced streams, instant plain answers) and asr, in their own process. */
async function runUpstream(): Promise<void> {
  const { startFakeLlm, startFakeAsr } = await import('../sim/http/index')
  const llm = await startFakeLlm({ chunkDelayMs: TOKEN_MS, prefillMs: PREFILL_MS })
  const asr = await startFakeAsr()
  process.stdout.write(JSON.stringify({ llm: llm.port, asr: asr.port }) + '\n')
  process.stdin.resume()
  process.stdin.on('end', () => process.exit(0))
}

function child(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ proc: ChildProcess; info: Record<string, unknown> }> {
  return spawnChild(SELF, args, { cwd: ROOT, env })
}

async function startNginx(upstreamPort: number): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  if (!fs.existsSync('/usr/sbin/nginx'))
    throw new Error("the gateway bench compares against Debian's nginx: install it first (apt-get install nginx-light)")
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-nginx-'))
  fs.chmodSync(dir, 0o755)
  const port = await freePort()
  const conf = `
${process.getuid?.() === 0 ? 'user root root;' : ''}
worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  # Idle upstream connections close before the fake llm's own 5 s keep-alive ends: a POST on a
  # connection the upstream is closing would be answered 502 (nginx retries only idempotent requests).
  upstream llm { server 127.0.0.1:${upstreamPort}; keepalive 128; keepalive_timeout 4s; }
  server {
    listen 127.0.0.1:${port};
    client_max_body_size 0;
    location / {
      proxy_pass http://llm;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 1800s;
    }
  }
}
`
  fs.writeFileSync(path.join(dir, 'nginx.conf'), conf)
  const proc: ChildProcess = spawn(
    '/usr/sbin/nginx',
    ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', path.join(dir, 'error.log')],
    {
      stdio: 'inherit',
    },
  )
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; ; i++) {
    try {
      await request(url, '/v1/models', 'GET')
      break
    } catch (err) {
      if (i >= 100) {
        proc.kill('SIGQUIT')
        throw err
      }
      await sleep(50)
    }
  }
  return {
    url,
    pid: proc.pid!,
    stop: async () => {
      proc.kill('SIGQUIT')
      await new Promise((r) => proc.once('exit', r))
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

let agent = new http.Agent({ keepAlive: true, maxSockets: 64 })

interface Answer {
  /** Request start to the first body byte (ms). */
  ttfb: number
  total: number
  /** SSE data events received. */
  chunks: number
  /** Times between reads that carried events (ms). */
  gaps: number[]
  status: number
}

/** One request; resolves with its timings and the SSE data events it carried. */
function request(base: string, p: string, body: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    const req = http.request(
      base + p,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let ttfb = -1
        let chunks = 0
        let last = -1
        const gaps: number[] = []
        res.on('data', (c: Buffer) => {
          const now = performance.now()
          if (ttfb < 0) ttfb = now - t0
          const n = c.toString('latin1').split('data: ').length - 1
          if (n === 0) return
          chunks += n
          if (last >= 0) gaps.push(now - last)
          last = now
        })
        res.on('end', () => resolve({ ttfb, total: performance.now() - t0, chunks, gaps, status: res.statusCode ?? 0 }))
        res.on('error', reject)
      },
    )
    req.setTimeout(30_000, () => req.destroy(new Error('timeout')))
    req.on('error', reject)
    req.end(body)
  })
}

const CLOCK_TICK_US = 10_000 // Linux's USER_HZ (100) in µs

/** CPU ticks (user + system) so far of a process and its children (nginx's master and its worker). */
function cpuTicks(pid: number): number {
  const kids = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim()
  let ticks = 0
  for (const id of [pid, ...(kids === '' ? [] : kids.split(/\s+/).map(Number))]) {
    const fields = fs.readFileSync(`/proc/${id}/stat`, 'utf8').split(') ')[1]!.split(' ')
    ticks += Number(fields[11]) + Number(fields[12])
  }
  return ticks
}

interface Plain {
  p50: number
  p99: number
  rps: number
}

const CHAT = JSON.stringify({ model: 'sim/Qwen3-8B-Instruct', messages: [{ role: 'user', content: 'hello bench' }] })
const PACED = JSON.stringify({ model: 'sim/Qwen3-8B-Instruct', prompt: 'x', max_tokens: PACED_TOKENS, stream: true })

/** `total` requests to `p` spread over `clients` concurrent loops (bounded by count and by `maxMs`). */
async function plainLoad(
  base: string,
  clients: number,
  total: number,
  p = '/v1/chat/completions',
  body = CHAT,
  maxMs = 20_000,
): Promise<Plain> {
  agent.destroy()
  agent = new http.Agent({ keepAlive: true, maxSockets: clients })
  for (let i = 0; i < Math.min(clients, 8); i++) await request(base, p, body) // warm connections
  const lat: number[] = []
  let started = 0
  const t0 = performance.now()
  const deadline = t0 + maxMs
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (started < total && performance.now() < deadline) {
        started++
        const r = await request(base, p, body)
        if (r.status !== 200) throw new Error(`${base}${p} answered ${r.status}`)
        lat.push(r.total)
      }
    }),
  )
  return { p50: pct(lat, 50), p99: pct(lat, 99), rps: lat.length / ((performance.now() - t0) / 1000) }
}

interface Paced {
  ttftP99: number
  gapP99: number
  errors: number
  chunks: number
  /** The proxy's CPU per 1,000 relayed chunks (ms); NaN for direct. */
  cpuPer1000: number
}

/** `clients` paced streams at once, `waves` times over, with the proxy's CPU measured around them. */
async function pacedLoad(base: string, pid: number | undefined, clients = 64, waves = 2): Promise<Paced> {
  agent.destroy()
  agent = new http.Agent({ keepAlive: true, maxSockets: clients })
  const ttft: number[] = []
  const gaps: number[] = []
  let errors = 0
  let chunks = 0
  const before = pid === undefined ? 0 : cpuTicks(pid)
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let w = 0; w < waves; w++) {
        const r = await request(base, '/v1/completions', PACED).catch(() => null)
        // Every token, the last empty chunk and [DONE].
        if (r === null || r.status !== 200 || r.chunks < PACED_TOKENS + 2) errors++
        if (r === null) continue
        ttft.push(r.ttfb)
        gaps.push(...r.gaps)
        chunks += r.chunks
      }
    }),
  )
  const cpuMs = pid === undefined ? NaN : ((cpuTicks(pid) - before) * CLOCK_TICK_US) / 1000
  return { ttftP99: pct(ttft, 99), gapP99: pct(gaps, 99), errors, chunks, cpuPer1000: (1000 * cpuMs) / chunks }
}

const ROUNDS = 3
/** Requests each target serves before the measured rounds. */
const WARM_UP_REQUESTS = 10_000

function mid(xs: number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
}

function pct(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((q / 100) * s.length))] ?? NaN
}

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Number(m[1]) * 1024 : 0
}

/** Streams a 200 MB multipart upload (generated on the fly) and samples Tandem's RSS while it flows. */
async function uploadRss(
  base: string,
  pid: number,
  bytes = 200 * 1024 * 1024,
): Promise<{ before: number; peak: number; seconds: number; status: number }> {
  const boundary = '----benchboundary'
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nasr\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.wav"\r\nContent-Type: audio/wav\r\n\r\n`,
  )
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`)
  global.gc?.()
  await sleep(300)
  const before = rssOf(pid)
  let peak = before
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 25)
  const t0 = performance.now()
  const status = await new Promise<number>((resolve, reject) => {
    const req = http.request(base + '/v1/audio/transcriptions', {
      method: 'POST',
      headers: {
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': head.length + bytes + tail.length,
      },
    })
    req.on('response', (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    const chunk = Buffer.alloc(1024 * 1024)
    let sent = 0
    const pump = (): void => {
      while (sent < bytes) {
        const n = Math.min(chunk.length, bytes - sent)
        sent += n
        if (!req.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void req.once('drain', pump)
      }
      req.end(tail)
    }
    req.write(head)
    pump()
  })
  clearInterval(sampler)
  peak = Math.max(peak, rssOf(pid))
  return { before, peak, seconds: (performance.now() - t0) / 1000, status }
}

async function scrubScores(): Promise<{
  precision: number
  recall: number
  examples: number
  tp: number
  fp: number
  fn: number
}> {
  const { detect } = await import('../../src-main/gateway/scrub/scrub')
  const corpus = JSON.parse(fs.readFileSync(path.join(ROOT, 'test/unit/gateway/scrub-corpus.json'), 'utf8')) as {
    terms: string[]
    examples: { text: string; expect: { type: string; value: string }[] }[]
  }
  let tp = 0
  let fp = 0
  let fn = 0
  for (const ex of corpus.examples) {
    const got = detect(ex.text, corpus.terms).map((f) => `${f.type}\u0000${f.value}`)
    const want = ex.expect.map((e) => `${e.type}\u0000${e.value}`)
    for (const g of got) {
      if (want.includes(g)) tp++
      else fp++
    }
    for (const w of want) if (!got.includes(w)) fn++
  }
  return { precision: tp / (tp + fp || 1), recall: tp / (tp + fn || 1), examples: corpus.examples.length, tp, fp, fn }
}

const msOf = (x: number): string => `${x.toFixed(2)} ms`

const pctOf = (x: number): string => `${(100 * x).toFixed(0)} %`

/** Replaces the text between `<!-- name:start -->` and `<!-- name:end -->` in a doc, when both are there. */
function writeSection(doc: string, name: string, text: string): void {
  if (!fs.existsSync(doc)) return
  const re = new RegExp(`(<!-- ${name}:start -->\n)[\\s\\S]*?(<!-- ${name}:end -->)`)
  const old = fs.readFileSync(doc, 'utf8')
  if (re.test(old))
    fs.writeFileSync(
      doc,
      old.replace(re, (_m, a: string, b: string) => `${a}${text}\n${b}`),
    )
}

/** Source lines of every .ts file under `dir`, at any depth. */
function sourceLines(dir: string): number {
  let n = 0
  for (const entry of fs.readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true }))
    if (entry.isFile() && entry.name.endsWith('.ts'))
      n += fs.readFileSync(path.join(entry.parentPath, entry.name), 'utf8').split('\n').length - 1
  return n
}

/** The lines of src-main/gateway and src-main/http before issue 30 (the commit it was filed on). */
const LINES_BEFORE = { gateway: 6080, http: 1297 }

interface Figures {
  plain1: Record<string, Plain>
  plain16: Record<string, Plain>
  paced: Record<string, Paced>
}

/** Issue 30's targets, each measured value beside its target (ratios within this one run). */
function goals(
  f: Figures,
  growthMb: number,
  validateRps: number,
): { what: string; value: string; target: string; met: boolean }[] {
  const ofFloor = f.plain16.tandem!.rps / f.plain16.floor!.rps
  const ttft = f.paced.tandem!.ttftP99 - f.paced.nginx!.ttftP99
  const gap = f.paced.tandem!.gapP99 - f.paced.nginx!.gapP99
  const added = f.plain1.tandem!.p50 - f.plain1.direct!.p50
  return [
    {
      what: 'non-stream req/s vs the Node floor, 16 connections',
      value: pctOf(ofFloor),
      target: '≥ 85 %',
      met: ofFloor >= 0.85,
    },
    { what: "64 paced streams: TTFT p99 minus nginx's", value: msOf(ttft), target: '≤ 3 ms', met: ttft <= 3 },
    { what: "64 paced streams: chunk-gap p99 minus nginx's", value: msOf(gap), target: '≤ 2 ms', met: gap <= 2 },
    {
      what: '64 paced streams: errors',
      value: String(f.paced.tandem!.errors),
      target: '0',
      met: f.paced.tandem!.errors === 0,
    },
    {
      what: '200 MB upload, Tandem RSS growth',
      value: `${growthMb.toFixed(1)} MB`,
      target: '< 64 MB',
      met: growthMb < 64,
    },
    {
      what: '/v1/validate req/s, 16 connections',
      value: validateRps.toFixed(0),
      target: '≥ 3,000',
      met: validateRps >= 3000,
    },
    { what: 'added p50 over direct, 1 client', value: msOf(added), target: '< 1 ms', met: added < 1 },
  ]
}

/** Every target's figures, ROUNDS interleaved rounds in a rotating order, the median round of each. */
async function measure(targets: Record<string, string>, pids: Record<string, number | undefined>): Promise<Figures> {
  const names = Object.keys(targets)
  // Steady state, as a daemon that has run for a while is: the Node proxies' hot code optimised first.
  for (const name of names) await plainLoad(targets[name]!, 16, WARM_UP_REQUESTS)
  const rounds: { plain1: Plain; plain16: Plain; paced: Paced }[][] = names.map(() => [])
  for (let round = 0; round < ROUNDS; round++)
    for (let k = 0; k < names.length; k++) {
      const at = (k + round) % names.length
      const base = targets[names[at]!]!
      rounds[at]!.push({
        plain1: await plainLoad(base, 1, 1000),
        plain16: await plainLoad(base, 16, 4000),
        paced: await pacedLoad(base, pids[names[at]!]),
      })
    }
  const f: Figures = { plain1: {}, plain16: {}, paced: {} }
  names.forEach((name, i) => {
    const rs = rounds[i]!
    const plain = (pick: (r: (typeof rs)[0]) => Plain): Plain => ({
      p50: mid(rs.map((r) => pick(r).p50)),
      p99: mid(rs.map((r) => pick(r).p99)),
      rps: mid(rs.map((r) => pick(r).rps)),
    })
    f.plain1[name] = plain((r) => r.plain1)
    f.plain16[name] = plain((r) => r.plain16)
    f.paced[name] = {
      ttftP99: mid(rs.map((r) => r.paced.ttftP99)),
      gapP99: mid(rs.map((r) => r.paced.gapP99)),
      errors: rs.reduce((n, r) => n + r.paced.errors, 0),
      chunks: mid(rs.map((r) => r.paced.chunks)),
      cpuPer1000: mid(rs.map((r) => r.paced.cpuPer1000)),
    }
  })
  return f
}

function tables(f: Figures): string[] {
  const names = Object.keys(f.plain16)
  const cpu = (x: number): string => (Number.isNaN(x) ? '' : x.toFixed(1))
  return [
    '| target | 1 client p50 ms | 16 clients p50 ms | p99 ms | req/s | 64 paced streams: TTFT p99 ms | chunk-gap p99 ms | errors | CPU ms per 1,000 chunks |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...names.map((n) => {
      const [a, b, c] = [f.plain1[n]!, f.plain16[n]!, f.paced[n]!]
      return `| ${n} | ${a.p50.toFixed(2)} | ${b.p50.toFixed(2)} | ${b.p99.toFixed(2)} | ${b.rps.toFixed(0)} | ${c.ttftP99.toFixed(2)} | ${c.gapP99.toFixed(2)} | ${c.errors} | ${cpu(c.cpuPer1000)} |`
    }),
  ]
}

async function main(): Promise<void> {
  const loadBefore = os.loadavg()[0]!
  const up = await child(['--role=upstream'])
  const llmPort = up.info.llm as number
  const asrPort = up.info.asr as number
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-data-'))
  // What ships: the built daemon, and the floor as plain JavaScript too (see spawnTranspiled).
  const env = { ...(await benchDaemonEnv(llmPort, asrPort, dataDir)), LICENSING_RATE_LIMIT: '0' }
  const tandem = await spawnBuiltDaemon(ROOT, env)
  const nginx = await startNginx(llmPort)
  const bareProxy = path.join(path.dirname(SELF), 'lib', 'bareProxy.ts')
  const floor = await spawnTranspiled(ROOT, bareProxy, 'runBareProxyRole', { BENCH_UPSTREAM_PORT: String(llmPort) })
  const targets = {
    direct: `http://127.0.0.1:${llmPort}`,
    nginx: nginx.url,
    tandem: tandem.info.url as string,
    floor: floor.info.url as string,
  }
  try {
    const f = await measure(targets, { nginx: nginx.pid, tandem: tandem.proc.pid, floor: floor.proc.pid })
    const upload = await uploadRss(targets.tandem, tandem.proc.pid!)
    // An unknown key: the whole request path (edge, router, rate limit, zod, the answer), no database row.
    const validate = await plainLoad(targets.tandem, 16, 20_000, '/v1/validate', '{"key":"TANDEM-BENCH-0000"}')
    const scrub = await scrubScores()
    const growthMb = (upload.peak - upload.before) / 2 ** 20
    const rows = goals(f, growthMb, validate.rps)
    const lines = { gateway: sourceLines('src-main/gateway'), http: sourceLines('src-main/http') }
    const table = [
      `Measured ${new Date().toISOString().slice(0, 16)}Z on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'cpu'}), Node ${process.version}, nginx 1 worker; each target warmed up with ${WARM_UP_REQUESTS.toLocaleString('en')} requests, then the median of ${ROUNDS} interleaved rounds; a paced stream is ${PACED_TOKENS} tokens at ${TOKEN_MS} ms after ${PREFILL_MS + TOKEN_MS} ms to the first; load average before the run ${loadBefore.toFixed(1)}.`,
      '',
      ...tables(f),
      '',
      '| target (issue 30) | Tandem | target | |',
      '|---|---|---|---|',
      ...rows.map((g) => `| ${g.what} | ${g.value} | ${g.target} | ${g.met ? 'met' : 'not met'} |`),
      '',
      `CPU per 1,000 relayed chunks: Tandem ${f.paced.tandem!.cpuPer1000.toFixed(1)} ms, Node floor ${f.paced.floor!.cpuPer1000.toFixed(1)} ms, nginx ${f.paced.nginx!.cpuPer1000.toFixed(1)} ms.`,
      '',
      `200 MB upload through \`/v1/audio/transcriptions\`: HTTP ${upload.status} in ${upload.seconds.toFixed(1)} s; Tandem RSS ${(upload.before / 2 ** 20).toFixed(0)} MB before, peak ${(upload.peak / 2 ** 20).toFixed(0)} MB, growth **${growthMb.toFixed(1)} MB**. \`/v1/validate\` (unknown key), 16 connections: ${validate.rps.toFixed(0)} req/s, p50 ${validate.p50.toFixed(2)} ms.`,
      '',
      `Source lines: src-main/gateway ${LINES_BEFORE.gateway} before issue 30, ${lines.gateway} now; src-main/http ${LINES_BEFORE.http} before, ${lines.http} now.`,
      '',
      `Scrub corpus (${scrub.examples} examples): precision ${(100 * scrub.precision).toFixed(1)} %, recall ${(100 * scrub.recall).toFixed(1)} % (TP ${scrub.tp}, FP ${scrub.fp}, FN ${scrub.fn}).`,
    ].join('\n')
    console.log(table)
    console.log('\ntargets (issue 30):')
    for (const g of rows)
      console.log(
        `  ${g.what.padEnd(52)} ${g.value.padStart(9)}   target ${g.target.padEnd(9)} ${g.met ? 'met' : 'NOT MET'}`,
      )
    writeSection(path.join(ROOT, 'docs', 'benchmarks.md'), 'bench', table)
  } finally {
    agent.destroy()
    await nginx.stop()
    floor.proc.stdin!.end()
    tandem.proc.kill('SIGTERM')
    up.proc.stdin!.end()
    await Promise.all([new Promise((r) => tandem.proc.once('exit', r)), new Promise((r) => up.proc.once('exit', r))])
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n)

/**
 * Tandem, then the Node floor, alone in front of the fake llm under --cpu-prof: 16 clients
 * non-stream, then 64 paced streams. Self time per stage inside each load's window, per request.
 */
async function profileRun(): Promise<void> {
  const up = await child(['--role=upstream'])
  const profDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-prof-'))
  const plainN = 12_000
  const runs: { mode: string; plain: ProfileSummary; stream: ProfileSummary; rps: number; streams: number }[] = []
  try {
    for (const mode of ['tandem', 'floor'] as const) {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-data-'))
      process.env.BENCH_CPU_PROF = profDir
      const env = {
        ...(await benchDaemonEnv(up.info.llm as number, up.info.asr as number, dataDir)),
        BENCH_UPSTREAM_PORT: String(up.info.llm),
      }
      const proxy = await child([mode === 'floor' ? '--role=bare' : '--role=tandem'], env)
      delete process.env.BENCH_CPU_PROF
      const url = proxy.info.url as string
      await plainLoad(url, 16, 2000) // warm up: JIT, connections
      const p0 = monotonicUs()
      const plain = await plainLoad(url, 16, plainN, undefined, undefined, 60_000)
      const p1 = monotonicUs()
      const paced = await pacedLoad(url, undefined)
      const p2 = monotonicUs()
      proxy.proc.stdin!.end()
      await new Promise((r) => proxy.proc.once('exit', r))
      fs.rmSync(dataDir, { recursive: true, force: true })
      const file = profileOf(profDir, proxy.proc.pid!)
      if (file === null) throw new Error(`the ${mode} child wrote no CPU profile`)
      const streams = Math.round(paced.chunks / (PACED_TOKENS + 2))
      runs.push({
        mode,
        plain: summarizeProfile(file, p0, p1),
        stream: summarizeProfile(file, p1, p2),
        rps: plain.rps,
        streams,
      })
    }
  } finally {
    agent.destroy()
    up.proc.stdin!.end()
    await new Promise((r) => up.proc.once('exit', r))
    fs.rmSync(profDir, { recursive: true, force: true })
  }
  const [tandem, floor] = runs as [(typeof runs)[0], (typeof runs)[0]]
  const busy = (s: ProfileSummary, n: number): string => ((1000 * s.busyMs) / n).toFixed(1)
  const us = (s: ProfileSummary, stage: string, n: number): string =>
    ((1000 * (s.stages.find((x) => x.stage === stage)?.ms ?? 0)) / n).toFixed(1)
  const stages = [...new Set([...tandem.plain.stages, ...floor.plain.stages].map((s) => s.stage))]
  const lines = [
    `Measured ${new Date().toISOString().slice(0, 16)}Z on ${os.cpus().length} cores, Node ${process.version}, load average ${os.loadavg()[0]!.toFixed(1)}; 16 clients, ${plainN} non-stream requests, then 64 paced streams twice over (${PACED_TOKENS} tokens each) per proxy; CPU self time inside each load's window, divided by the requests in it.`,
    '',
    '| stage | Tandem: µs per request | Node floor: µs per request | Tandem: µs per stream | Node floor: µs per stream |',
    '|---|---:|---:|---:|---:|',
    ...stages.map(
      (st) =>
        `| ${st} | ${us(tandem.plain, st, plainN)} | ${us(floor.plain, st, plainN)} | ${us(tandem.stream, st, tandem.streams)} | ${us(floor.stream, st, floor.streams)} |`,
    ),
    `| **busy CPU in all** | **${busy(tandem.plain, plainN)}** | **${busy(floor.plain, plainN)}** | **${busy(tandem.stream, tandem.streams)}** | **${busy(floor.stream, floor.streams)}** |`,
    '',
    `Requests per second in these windows (one proxy alone, profiler on): Tandem ${tandem.rps.toFixed(0)}, Node floor ${floor.rps.toFixed(0)}.`,
    '',
    'Top frames by self time, Tandem, non-stream window:',
    '',
    '| frame | ms | µs per request |',
    '|---|---:|---:|',
    ...tandem.plain.top.map((f) => `| \`${f.frame}\` | ${f.ms.toFixed(0)} | ${((1000 * f.ms) / plainN).toFixed(1)} |`),
  ].join('\n')
  console.log(lines)
  writeSection(path.join(ROOT, 'docs', 'gateway-profile.md'), 'profile', lines)
}

// Dispatch last: everything above is initialised by now.
if (role === 'upstream') await runUpstream()
else if (role === 'bare') await runBareProxy()
else if (role === 'tandem') await runDaemonChild()
else if (process.argv.includes('--profile')) await profileRun()
else await main()
