// Gateway bench (issues 4, 15): direct vs Debian nginx vs Tandem vs two bare Node proxies in front of
// the same fake llm, at 1, 16 and 64 concurrent clients: the bare Node proxy (Node's HTTP server and
// undici, none of Tandem's work) and the Node floor (Node's HTTP server and Tandem's own relay
// client, none of Tandem's other work: what Tandem would cost if it did nothing but relay); a 200 MB
// upload through /v1/audio/transcriptions with Tandem's peak RSS growth; and the scrub corpus's
// precision and recall. Loopback only, every loop bounded.
// Run: npx tsx test/bench/gateway.mts   (prints each target beside its ratio, met / not met, and
//      writes the tables into docs/benchmarks.md, Gateway section)
//      npx tsx test/bench/gateway.mts --profile   (Tandem alone under --cpu-prof, fast path on and
//      off: where a relayed request's CPU time goes, written into docs/gateway-profile.md)
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

/** Child: the bare Node proxy (Node's HTTP server and undici, nothing of Tandem's), the floor Tandem stands on. */
async function runBareProxy(): Promise<void> {
  const { runBareProxyRole } = await import('./lib/bareProxy')
  await runBareProxyRole()
}

/** Child: the fake llm and asr, in their own process so they do not share the load generator's CPU. */
async function runUpstream(): Promise<void> {
  const { startFakeLlm, startFakeAsr } = await import('../sim/http/index')
  const llm = await startFakeLlm()
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

/** One request; resolves with time to first body byte, total time and the number of SSE data events. */
function request(
  base: string,
  p: string,
  method: 'GET' | 'POST',
  body?: string,
): Promise<{ ttfb: number; total: number; chunks: number; status: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    const req = http.request(
      base + p,
      {
        method,
        agent,
        headers: body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {},
      },
      (res) => {
        let ttfb = -1
        let chunks = 0
        let tail = ''
        res.on('data', (c: Buffer) => {
          if (ttfb < 0) ttfb = performance.now() - t0
          const s = tail + c.toString('latin1')
          chunks += s.split('data: ').length - 1
          tail = s.slice(-6)
        })
        res.on('end', () => resolve({ ttfb, total: performance.now() - t0, chunks, status: res.statusCode ?? 0 }))
        res.on('error', reject)
      },
    )
    req.setTimeout(30_000, () => req.destroy(new Error('timeout')))
    req.on('error', reject)
    req.end(body)
  })
}

interface Load {
  p50: number
  p99: number
  rps: number
  ttfbP50: number
  chunksPerS: number
  /** The proxy's CPU (user + system) per request during the load, µs; NaN for direct. */
  cpuUs: number
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

/** `load`, with the proxy's CPU per request measured around it when the proxy's pid is known. */
async function loadWithCpu(pid: number | undefined, ...args: Parameters<typeof load>): Promise<Load> {
  const before = pid === undefined ? 0 : cpuTicks(pid)
  const result = await load(...args)
  if (pid !== undefined) result.cpuUs = ((cpuTicks(pid) - before) * CLOCK_TICK_US) / result.count
  return result
}

/** `total` requests spread over `clients` concurrent loops (bounded by count and by `maxMs`). */
async function load(
  base: string,
  clients: number,
  total: number,
  stream: boolean,
  maxMs = 20_000,
): Promise<Load & { count: number }> {
  agent.destroy()
  agent = new http.Agent({ keepAlive: true, maxSockets: clients })
  const body = JSON.stringify(
    stream
      ? { model: 'sim/Qwen3-8B-Instruct', prompt: 'x', max_tokens: 200, stream: true }
      : { model: 'sim/Qwen3-8B-Instruct', messages: [{ role: 'user', content: 'hello bench' }] },
  )
  const p = stream ? '/v1/completions' : '/v1/chat/completions'
  for (let i = 0; i < Math.min(clients, 8); i++) await request(base, p, 'POST', body) // warm connections
  const lat: number[] = []
  const ttfb: number[] = []
  let chunks = 0
  let started = 0
  const t0 = performance.now()
  const deadline = t0 + maxMs
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (started < total && performance.now() < deadline) {
        started++
        const r = await request(base, p, 'POST', body)
        if (r.status !== 200) throw new Error(`${base}${p} answered ${r.status}`)
        lat.push(r.total)
        ttfb.push(r.ttfb)
        chunks += r.chunks
      }
    }),
  )
  const elapsed = (performance.now() - t0) / 1000
  return {
    count: lat.length,
    cpuUs: NaN,
    p50: pct(lat, 50),
    p99: pct(lat, 99),
    rps: lat.length / elapsed,
    ttfbP50: pct(ttfb, 50),
    chunksPerS: chunks / elapsed,
  }
}

const ROUNDS = 5
/** Requests and streams each target serves before the measured rounds. */
const WARM_UP_REQUESTS = 10_000
const WARM_UP_STREAMS = 300

/** Metric by metric, the median over rounds. */
function median(rounds: { plain: Load; stream: Load }[]): { plain: Load; stream: Load } {
  const mid = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  const of = (pick: (r: { plain: Load; stream: Load }) => Load): Load => ({
    p50: mid(rounds.map((r) => pick(r).p50)),
    p99: mid(rounds.map((r) => pick(r).p99)),
    rps: mid(rounds.map((r) => pick(r).rps)),
    ttfbP50: mid(rounds.map((r) => pick(r).ttfbP50)),
    chunksPerS: mid(rounds.map((r) => pick(r).chunksPerS)),
    cpuUs: mid(rounds.map((r) => pick(r).cpuUs)),
  })
  return { plain: of((r) => r.plain), stream: of((r) => r.stream) }
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
  const { detect } = await import('../../src-main/gateway/scrub')
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

type Results = Record<string, Record<number, { plain: Load; stream: Load }>>

interface TargetRow {
  what: string
  value: string
  /** The same figure for the bare Node proxy: what Node's HTTP server and undici reach with none of Tandem's work. */
  bare: string
  /** The same figure for the Node floor: Node's HTTP server and Tandem's relay client, nothing else. */
  floor: string
  target: string
  met: boolean
}

/** Issue 15's targets, each measured value beside its target (ratios within this one run). */
function targetRows(r: Results, uploadGrowthMb: number): TargetRow[] {
  const rows: TargetRow[] = []
  const each = (
    what: string,
    target: string,
    figure: (proxy: Results[string]) => number,
    show: (x: number) => string,
    met: (x: number) => boolean,
  ): void => {
    const value = figure(r.tandem!)
    rows.push({
      what,
      value: show(value),
      bare: show(figure(r.bare!)),
      floor: show(figure(r.floor!)),
      target,
      met: met(value),
    })
  }
  for (const c of [16, 64])
    each(
      `non-stream req/s vs nginx, ${c} clients`,
      '≥ 75 %',
      (p) => p[c]!.plain.rps / r.nginx![c]!.plain.rps,
      pctOf,
      (x) => x >= 0.75,
    )
  for (const [c, limit] of [
    [1, 1],
    [16, 1.5],
  ] as const)
    each(
      `added p50 over direct, ${c} client${c > 1 ? 's' : ''}`,
      `< ${limit} ms`,
      (p) => p[c]!.plain.p50 - r.direct![c]!.plain.p50,
      msOf,
      (x) => x < limit,
    )
  for (const c of [16, 64])
    each(
      `stream chunks/s vs nginx, ${c} clients`,
      '≥ 90 %',
      (p) => p[c]!.stream.chunksPerS / r.nginx![c]!.stream.chunksPerS,
      pctOf,
      (x) => x >= 0.9,
    )
  for (const c of [1, 16, 64])
    each(
      `stream TTFB p50 minus nginx's, ${c} client${c > 1 ? 's' : ''}`,
      '≤ 0.5 ms',
      (p) => p[c]!.stream.ttfbP50 - r.nginx![c]!.stream.ttfbP50,
      msOf,
      (x) => x <= 0.5,
    )
  rows.push({
    what: '200 MB upload, Tandem RSS growth',
    value: `${uploadGrowthMb.toFixed(1)} MB`,
    bare: '',
    floor: '',
    target: '< 64 MB',
    met: uploadGrowthMb < 64,
  })
  return rows
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

async function main(): Promise<void> {
  const loadBefore = os.loadavg()[0]!
  const up = await child(['--role=upstream'])
  const llmPort = up.info.llm as number
  const asrPort = up.info.asr as number
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-data-'))
  // What ships: the built daemon, and the bare proxy as plain JavaScript too (see spawnTranspiled).
  const tandem = await spawnBuiltDaemon(ROOT, await benchDaemonEnv(llmPort, asrPort, dataDir))
  const nginx = await startNginx(llmPort)
  const bareProxy = path.join(path.dirname(SELF), 'lib', 'bareProxy.ts')
  const bare = await spawnTranspiled(ROOT, bareProxy, 'runBareProxyRole', { BENCH_UPSTREAM_PORT: String(llmPort) })
  const floor = await spawnTranspiled(ROOT, bareProxy, 'runBareProxyRole', {
    BENCH_UPSTREAM_PORT: String(llmPort),
    BENCH_BARE_CLIENT: 'relay',
  })
  const targets = {
    direct: `http://127.0.0.1:${llmPort}`,
    nginx: nginx.url,
    tandem: tandem.info.url as string,
    bare: bare.info.url as string,
    floor: floor.info.url as string,
  }
  const rows: string[] = []
  const results: Results = {}
  try {
    // Other work on the machine comes in bursts: each case runs ROUNDS times, interleaved across the
    // targets in a rotating order, and the table shows the median round.
    const names = Object.keys(targets) as (keyof typeof targets)[]
    const pids: Record<string, number | undefined> = {
      nginx: nginx.pid,
      tandem: tandem.proc.pid,
      bare: bare.proc.pid,
      floor: floor.proc.pid,
    }
    // Steady state, as a daemon that has run for a while is: the Node proxies' hot code optimised
    // by the JIT before anything is measured (nginx and the fake llm need no warming, and get it too).
    for (const name of names) {
      await load(targets[name], 16, WARM_UP_REQUESTS, false)
      await load(targets[name], 16, WARM_UP_STREAMS, true)
    }
    for (const clients of [1, 16, 64]) {
      const rounds: Record<string, { plain: Load; stream: Load }[]> = {}
      for (let round = 0; round < ROUNDS; round++) {
        for (let k = 0; k < names.length; k++) {
          const name = names[(k + round) % names.length]!
          const plain = await loadWithCpu(pids[name], targets[name], clients, clients === 1 ? 600 : 2000, false)
          const stream = await load(targets[name], clients, clients === 1 ? 100 : 320, true)
          ;(rounds[name] ??= []).push({ plain, stream })
        }
      }
      for (const name of names) {
        const m = median(rounds[name]!)
        ;(results[name] ??= {})[clients] = m
        rows.push(
          `| ${name} | ${clients} | ${m.plain.p50.toFixed(2)} | ${m.plain.p99.toFixed(2)} | ${m.plain.rps.toFixed(0)} | ${Number.isNaN(m.plain.cpuUs) ? '' : m.plain.cpuUs.toFixed(0)} | ${m.stream.ttfbP50.toFixed(2)} | ${m.stream.chunksPerS.toFixed(0)} |`,
        )
        process.stderr.write(`${rows.at(-1)}\n`)
      }
    }
    const upload = await uploadRss(targets.tandem, tandem.proc.pid!)
    const scrub = await scrubScores()
    const added = (c: number): string => (results.tandem![c]!.plain.p50 - results.direct![c]!.plain.p50).toFixed(2)
    // What Tandem's own work costs: its rate against a Node server that does nothing but relay.
    const ofFloor = (c: number): string =>
      ((100 * results.tandem![c]!.plain.rps) / results.floor![c]!.plain.rps).toFixed(0)
    const ratio = (c: number): string =>
      ((100 * results.tandem![c]!.stream.chunksPerS) / results.nginx![c]!.stream.chunksPerS).toFixed(0)
    const growthMb = (upload.peak - upload.before) / 2 ** 20
    const goals = targetRows(results, growthMb)
    const table = [
      `Measured ${new Date().toISOString().slice(0, 16)}Z on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'cpu'}), Node ${process.version}, nginx 1 worker; each target warmed up with ${WARM_UP_REQUESTS.toLocaleString('en')} requests and ${WARM_UP_STREAMS} streams, then the median of ${ROUNDS} interleaved rounds; load average before the run ${loadBefore.toFixed(1)}.`,
      '',
      '| target | clients | non-stream p50 ms | p99 ms | req/s | proxy CPU µs/req | stream TTFB p50 ms | stream chunks/s |',
      '|---|---|---|---|---|---|---|---|',
      ...rows,
      '',
      '| summary | 1 client | 16 clients | 64 clients |',
      '|---|---|---|---|',
      `| Tandem added p50 latency over direct (ms) | ${added(1)} | ${added(16)} | ${added(64)} |`,
      `| Tandem stream throughput vs nginx | ${ratio(1)} % | ${ratio(16)} % | ${ratio(64)} % |`,
      `| Tandem non-stream req/s vs the Node floor | ${ofFloor(1)} % | ${ofFloor(16)} % | ${ofFloor(64)} % |`,
      '',
      '| target (issue 15) | Tandem | target | | bare Node proxy | Node floor |',
      '|---|---|---|---|---|---|',
      ...goals.map(
        (g) => `| ${g.what} | ${g.value} | ${g.target} | ${g.met ? 'met' : 'not met'} | ${g.bare} | ${g.floor} |`,
      ),
      '',
      `200 MB upload through \`/v1/audio/transcriptions\`: HTTP ${upload.status} in ${upload.seconds.toFixed(1)} s; Tandem RSS ${(upload.before / 2 ** 20).toFixed(0)} MB before, peak ${(upload.peak / 2 ** 20).toFixed(0)} MB, growth **${growthMb.toFixed(1)} MB**.`,
      '',
      `Scrub corpus (${scrub.examples} examples): precision ${(100 * scrub.precision).toFixed(1)} %, recall ${(100 * scrub.recall).toFixed(1)} % (TP ${scrub.tp}, FP ${scrub.fp}, FN ${scrub.fn}).`,
    ].join('\n')
    console.log(table)
    console.log('\ntargets (issue 15):')
    for (const g of goals)
      console.log(
        `  ${g.what.padEnd(44)} ${g.value.padStart(9)}   target ${g.target.padEnd(9)} ${(g.met ? 'met' : 'NOT MET').padEnd(8)} ${g.bare === '' ? '' : `bare Node proxy ${g.bare.padStart(8)}   Node floor ${g.floor.padStart(8)}`}`,
      )
    writeSection(path.join(ROOT, 'docs', 'benchmarks.md'), 'bench', table)
  } finally {
    agent.destroy()
    await nginx.stop()
    bare.proc.stdin!.end()
    floor.proc.stdin!.end()
    tandem.proc.kill('SIGTERM')
    up.proc.stdin!.end()
    await Promise.all([new Promise((r) => tandem.proc.once('exit', r)), new Promise((r) => up.proc.once('exit', r))])
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n)

/**
 * Tandem alone in front of the fake llm, under --cpu-prof, with the fast path on and then off: 16
 * clients, non-stream then stream. Self time per stage inside each load's window, per request.
 */
async function profileRun(): Promise<void> {
  const up = await child(['--role=upstream'])
  const profDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-prof-'))
  const plainN = 12_000
  const streamN = 480
  const runs: { mode: string; plain: ProfileSummary; stream: ProfileSummary; rps: number }[] = []
  try {
    for (const mode of ['on', 'off', 'bare'] as const) {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-data-'))
      process.env.BENCH_CPU_PROF = profDir
      const env = {
        ...(await benchDaemonEnv(up.info.llm as number, up.info.asr as number, dataDir)),
        GATEWAY_FAST_PATH: mode === 'off' ? 'off' : 'on',
        BENCH_UPSTREAM_PORT: String(up.info.llm),
      }
      const tandem = await child([mode === 'bare' ? '--role=bare' : '--role=tandem'], env)
      delete process.env.BENCH_CPU_PROF
      const url = tandem.info.url as string
      await load(url, 16, 2000, false) // warm up: JIT, connections
      const p0 = monotonicUs()
      const plain = await load(url, 16, plainN, false, 60_000)
      const p1 = monotonicUs()
      await load(url, 16, streamN, true, 60_000)
      const p2 = monotonicUs()
      tandem.proc.stdin!.end()
      await new Promise((r) => tandem.proc.once('exit', r))
      fs.rmSync(dataDir, { recursive: true, force: true })
      const file = profileOf(profDir, tandem.proc.pid!)
      if (file === null) throw new Error(`the ${mode === 'bare' ? 'bare proxy' : 'Tandem'} child wrote no CPU profile`)
      runs.push({ mode, plain: summarizeProfile(file, p0, p1), stream: summarizeProfile(file, p1, p2), rps: plain.rps })
    }
  } finally {
    agent.destroy()
    up.proc.stdin!.end()
    await new Promise((r) => up.proc.once('exit', r))
    fs.rmSync(profDir, { recursive: true, force: true })
  }
  const [on, off, bare] = runs as [(typeof runs)[0], (typeof runs)[0], (typeof runs)[0]]
  const busy = (s: ProfileSummary, n: number): string => ((1000 * s.busyMs) / n).toFixed(1)
  const us = (s: ProfileSummary, stage: string, n: number): string =>
    ((1000 * (s.stages.find((x) => x.stage === stage)?.ms ?? 0)) / n).toFixed(1)
  const stages = [...new Set([...on.plain.stages, ...off.plain.stages, ...bare.plain.stages].map((s) => s.stage))]
  const lines = [
    `Measured ${new Date().toISOString().slice(0, 16)}Z on ${os.cpus().length} cores, Node ${process.version}, load average ${os.loadavg()[0]!.toFixed(1)}; 16 clients, ${plainN} non-stream requests then ${streamN} streams (200 tokens each) per mode; CPU self time inside each load's window, divided by the requests in it.`,
    '',
    '| stage | fast path: µs per request | router (GATEWAY_FAST_PATH=off): µs per request | bare Node proxy: µs per request | fast path: µs per stream | bare Node proxy: µs per stream |',
    '|---|---:|---:|---:|---:|---:|',
    ...stages.map(
      (st) =>
        `| ${st} | ${us(on.plain, st, plainN)} | ${us(off.plain, st, plainN)} | ${us(bare.plain, st, plainN)} | ${us(on.stream, st, streamN)} | ${us(bare.stream, st, streamN)} |`,
    ),
    `| **busy CPU in all** | **${busy(on.plain, plainN)}** | **${busy(off.plain, plainN)}** | **${busy(bare.plain, plainN)}** | **${busy(on.stream, streamN)}** | **${busy(bare.stream, streamN)}** |`,
    '',
    `Requests per second in these windows (one proxy alone, profiler on): fast path ${on.rps.toFixed(0)}, router ${off.rps.toFixed(0)}, bare Node proxy ${bare.rps.toFixed(0)}.`,
    '',
    'Top frames by self time, fast path, non-stream window:',
    '',
    '| frame | ms | µs per request |',
    '|---|---:|---:|',
    ...on.plain.top.map((f) => `| \`${f.frame}\` | ${f.ms.toFixed(0)} | ${((1000 * f.ms) / plainN).toFixed(1)} |`),
    '',
    'Top frames by self time, fast path, stream window:',
    '',
    '| frame | ms | µs per stream |',
    '|---|---:|---:|',
    ...on.stream.top.map((f) => `| \`${f.frame}\` | ${f.ms.toFixed(0)} | ${((1000 * f.ms) / streamN).toFixed(1)} |`),
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
