// Gateway bench (issue 4): direct vs Debian nginx vs Tandem in front of the same fake llm, at 1, 16
// and 64 concurrent clients; a 200 MB upload through /v1/audio/transcriptions with Tandem's peak
// RSS growth; and the scrub corpus's precision and recall. Loopback only, every loop bounded.
// Run: npx tsx test/bench/gateway.mts   (writes the table into docs/benchmarks.md, Gateway section)
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort, runDaemonChild, spawnChild } from './lib/child'

const SELF = fileURLToPath(import.meta.url)
const ROOT = path.resolve(path.dirname(SELF), '../..')
const role = process.argv.find((a) => a.startsWith('--role='))?.slice(7)

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

async function startNginx(upstreamPort: number): Promise<{ url: string; stop(): Promise<void> }> {
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
  upstream llm { server 127.0.0.1:${upstreamPort}; keepalive 128; }
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
}

/** `total` requests spread over `clients` concurrent loops (bounded by count and by `maxMs`). */
async function load(base: string, clients: number, total: number, stream: boolean, maxMs = 20_000): Promise<Load> {
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
    p50: pct(lat, 50),
    p99: pct(lat, 99),
    rps: lat.length / elapsed,
    ttfbP50: pct(ttfb, 50),
    chunksPerS: chunks / elapsed,
  }
}

const ROUNDS = 3

/** Metric by metric, the median over rounds. */
function median(rounds: { plain: Load; stream: Load }[]): { plain: Load; stream: Load } {
  const mid = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  const of = (pick: (r: { plain: Load; stream: Load }) => Load): Load => ({
    p50: mid(rounds.map((r) => pick(r).p50)),
    p99: mid(rounds.map((r) => pick(r).p99)),
    rps: mid(rounds.map((r) => pick(r).rps)),
    ttfbP50: mid(rounds.map((r) => pick(r).ttfbP50)),
    chunksPerS: mid(rounds.map((r) => pick(r).chunksPerS)),
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

async function main(): Promise<void> {
  const loadBefore = os.loadavg()[0]!
  const up = await child(['--role=upstream'])
  const llmPort = up.info.llm as number
  const asrPort = up.info.asr as number
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-data-'))
  const tandem = await child(['--role=tandem'], {
    PORT: String(await freePort()),
    BIND: '127.0.0.1',
    DATA_DIR: dataDir,
    NODE1_HOST: '127.0.0.1',
    NODE1_USER: 'bench',
    NODE2_HOST: '127.0.0.1',
    NODE2_USER: 'bench',
    LLM_PORT: String(llmPort),
    ASR_PORT: String(asrPort),
    RATE_SOURCES: 'http://127.0.0.1:9',
    LOG_LEVEL: 'warn',
  })
  const nginx = await startNginx(llmPort)
  const targets = { direct: `http://127.0.0.1:${llmPort}`, nginx: nginx.url, tandem: tandem.info.url as string }
  const rows: string[] = []
  const results: Record<string, Record<number, { plain: Load; stream: Load }>> = {}
  try {
    // Other work on the machine comes in bursts: each case runs ROUNDS times, interleaved across the
    // three targets in a rotating order, and the table shows the median round.
    const names = Object.keys(targets) as (keyof typeof targets)[]
    for (const clients of [1, 16, 64]) {
      const rounds: Record<string, { plain: Load; stream: Load }[]> = {}
      for (let round = 0; round < ROUNDS; round++) {
        for (let k = 0; k < names.length; k++) {
          const name = names[(k + round) % names.length]!
          const plain = await load(targets[name], clients, clients === 1 ? 600 : 2000, false)
          const stream = await load(targets[name], clients, clients === 1 ? 100 : 320, true)
          ;(rounds[name] ??= []).push({ plain, stream })
        }
      }
      for (const name of names) {
        const m = median(rounds[name]!)
        ;(results[name] ??= {})[clients] = m
        rows.push(
          `| ${name} | ${clients} | ${m.plain.p50.toFixed(2)} | ${m.plain.p99.toFixed(2)} | ${m.plain.rps.toFixed(0)} | ${m.stream.ttfbP50.toFixed(2)} | ${m.stream.chunksPerS.toFixed(0)} |`,
        )
        process.stderr.write(`${rows.at(-1)}\n`)
      }
    }
    const upload = await uploadRss(targets.tandem, tandem.proc.pid!)
    const scrub = await scrubScores()
    const added = (c: number): string => (results.tandem![c]!.plain.p50 - results.direct![c]!.plain.p50).toFixed(2)
    const ratio = (c: number): string =>
      ((100 * results.tandem![c]!.stream.chunksPerS) / results.nginx![c]!.stream.chunksPerS).toFixed(0)
    const table = [
      `Measured ${new Date().toISOString().slice(0, 16)}Z on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'cpu'}), Node ${process.version}, nginx 1 worker; median of ${ROUNDS} interleaved rounds; load average before the run ${loadBefore.toFixed(1)}.`,
      '',
      '| target | clients | non-stream p50 ms | p99 ms | req/s | stream TTFB p50 ms | stream chunks/s |',
      '|---|---|---|---|---|---|---|',
      ...rows,
      '',
      '| summary | 1 client | 16 clients | 64 clients |',
      '|---|---|---|---|',
      `| Tandem added p50 latency over direct (ms) | ${added(1)} | ${added(16)} | ${added(64)} |`,
      `| Tandem stream throughput vs nginx | ${ratio(1)} % | ${ratio(16)} % | ${ratio(64)} % |`,
      '',
      `200 MB upload through \`/v1/audio/transcriptions\`: HTTP ${upload.status} in ${upload.seconds.toFixed(1)} s; Tandem RSS ${(upload.before / 2 ** 20).toFixed(0)} MB before, peak ${(upload.peak / 2 ** 20).toFixed(0)} MB, growth **${((upload.peak - upload.before) / 2 ** 20).toFixed(1)} MB**.`,
      '',
      `Scrub corpus (${scrub.examples} examples): precision ${(100 * scrub.precision).toFixed(1)} %, recall ${(100 * scrub.recall).toFixed(1)} % (TP ${scrub.tp}, FP ${scrub.fp}, FN ${scrub.fn}).`,
    ].join('\n')
    console.log(table)
    const doc = path.join(ROOT, 'docs', 'benchmarks.md')
    if (fs.existsSync(doc)) {
      const text = fs.readFileSync(doc, 'utf8')
      const re = /(<!-- bench:start -->\n)[\s\S]*?(\n<!-- bench:end -->)/
      if (re.test(text)) fs.writeFileSync(doc, text.replace(re, `$1${table}$2`))
    }
  } finally {
    agent.destroy()
    await nginx.stop()
    tandem.proc.stdin!.end()
    up.proc.stdin!.end()
    await Promise.all([new Promise((r) => tandem.proc.once('exit', r)), new Promise((r) => up.proc.once('exit', r))])
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

// Dispatch last: everything above is initialised by now.
if (role === 'upstream') await runUpstream()
else if (role === 'tandem') await runDaemonChild()
else await main()
