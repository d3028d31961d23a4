// Diarized transcription bench (issue 43): what `response_format=diarized_json` on
// /v1/audio/transcriptions adds over plain `json` on a 10-minute recording (16 kHz mono 16-bit WAV,
// three synthetic voices), the /api/health latency while it runs, and the daemon's memory for a
// 2-hour upload. The daemon runs in a child in front of the fake asr in another child, so the
// figures are Tandem's: its wall time, and its own CPU time (read from the daemon's process over a
// loopback stats port), which leaves out the fake's work. `json` is relayed to the asr in one call;
// `diarized_json` asks word timestamps and diarization per 5-minute chunk and matches voices.
// Targets: Tandem's added CPU < 2 s per 10 minutes of audio; the daemon's event-loop delay p99 < 100 ms
// during it (and /api/health's latency beside it, with the relayed json request as the baseline); the
// daemon's resident memory grows < 128 MiB over a 230 MB (2-hour) upload (uploads go to disk).
// Prints figures, asserts nothing; loopback only. Run: npx tsx test/bench/diarizedJson.mts
import type { ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { benchDaemonEnv, runFakeAsrChild, spawnChild } from './lib/child'

const RUNS = Number(process.env.RUNS ?? 3)
const SELF = fileURLToPath(import.meta.url)
const ROOT = path.resolve(path.dirname(SELF), '../..')
const MiB = 1024 * 1024

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN
const pct = (xs: number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? NaN

interface Stats {
  cpuMs: number
  rss: number
}

async function recording(seconds: number): Promise<Buffer> {
  const { toneWav, TONE_VOICES_HZ } = await import('../sim/http/index')
  const turns: { hz: number; seconds: number }[] = []
  for (let t = 0, i = 0; t < seconds; i++) {
    const len = Math.min(15 + ((i * 7) % 20), seconds - t)
    turns.push({ hz: TONE_VOICES_HZ[[0, 1, 2, 1, 0, 2][i % 6]!]!, seconds: len })
    t += len
  }
  return toneWav(turns, 16_000)
}

async function main(): Promise<void> {
  const load = (): string =>
    os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')
  console.log(`load average ${load()} on ${os.cpus().length} cores (wall times include waiting for a core)`)
  const asr = await spawnChild(SELF, ['--role=asr'], { cwd: ROOT })
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-diarized-'))
  const procs: ChildProcess[] = [asr.proc]
  try {
    const tandem = await spawnChild(SELF, ['--role=tandem'], {
      cwd: ROOT,
      // No llm: port 9 refuses. A small disk floor: the bench's own machine is shared.
      env: { ...(await benchDaemonEnv(9, Number(asr.info.port), dataDir)), GATEWAY_DISK_FLOOR_MB: '64' },
    })
    procs.push(tandem.proc)
    const base = tandem.info.url as string
    const stats = async (): Promise<Stats> => (await (await fetch(tandem.info.stats as string)).json()) as Stats
    const post = async (wav: Buffer, format: string): Promise<{ status: number; wall: number; cpu: number }> => {
      const form = new FormData()
      form.append('file', new Blob([new Uint8Array(wav)], { type: 'audio/wav' }), 'meeting.wav')
      form.append('model', 'asr')
      form.append('response_format', format)
      const before = await stats()
      const t = performance.now()
      const res = await fetch(`${base}/v1/audio/transcriptions`, { method: 'POST', body: form })
      await res.arrayBuffer()
      const wall = performance.now() - t
      return { status: res.status, wall, cpu: (await stats()).cpuMs - before.cpuMs }
    }

    const ten = await recording(600)
    await post(ten, 'json')
    await post(ten, 'diarized_json')
    const json: { wall: number; cpu: number }[] = []
    const diar: { wall: number; cpu: number }[] = []
    for (let r = 0; r < RUNS; r++) {
      json.push(await post(ten, 'json'))
      diar.push(await post(ten, 'diarized_json'))
    }
    const addedWall = median(diar.map((d) => d.wall)) - median(json.map((d) => d.wall))
    const addedCpu = median(diar.map((d) => d.cpu)) - median(json.map((d) => d.cpu))
    console.log(`Medians of ${RUNS} runs on a 10-minute WAV (${(ten.length / MiB).toFixed(1)} MiB), ms:`)
    console.log('| format | wall | daemon CPU |')
    console.log('|---|---|---|')
    console.log(
      `| json (relayed) | ${median(json.map((d) => d.wall)).toFixed(0)} | ${median(json.map((d) => d.cpu)).toFixed(0)} |`,
    )
    console.log(
      `| diarized_json | ${median(diar.map((d) => d.wall)).toFixed(0)} | ${median(diar.map((d) => d.cpu)).toFixed(0)} |`,
    )
    console.log(
      `added by diarized_json: wall ${addedWall.toFixed(0)} ms (fake asr's work included), Tandem CPU ${addedCpu.toFixed(0)} ms`,
    )
    console.log(`Tandem's added CPU < 2 s per 10 minutes of audio: ${addedCpu < 2000 ? 'met' : 'not met'}`)

    // /api/health while a request runs, and the daemon's own event-loop delay (perf_hooks) meanwhile;
    // the relayed json request is the baseline on the same machine at the same load.
    const during = async (format: string): Promise<{ p99: number; loopP99: number; loopMax: number }> => {
      await fetch(`${tandem.info.stats as string}?reset`)
      let done = false
      const call = post(ten, format).finally(() => (done = true))
      const health: number[] = []
      while (!done) {
        const t = performance.now()
        await fetch(`${base}/api/health`).then((r) => r.arrayBuffer())
        health.push(performance.now() - t)
      }
      await call
      const s = (await stats()) as Stats & { loopP99: number; loopMax: number }
      const p99 = pct(health, 0.99)
      console.log(
        `| ${format} | ${health.length} | ${pct(health, 0.5).toFixed(1)} | ${p99.toFixed(1)} | ${Math.max(...health).toFixed(1)} | ${s.loopP99.toFixed(1)} | ${s.loopMax.toFixed(1)} |`,
      )
      return { p99, loopP99: s.loopP99, loopMax: s.loopMax }
    }
    console.log(
      '| during | health calls | health p50 ms | health p99 ms | health max ms | event-loop delay p99 ms | max ms |',
    )
    console.log('|---|---|---|---|---|---|---|')
    const base0 = await during('json')
    const dj = await during('diarized_json')
    console.log(
      `event loop: daemon loop-delay p99 < 100 ms during diarized_json: ${dj.loopP99 < 100 ? 'met' : 'not met'} (json: ${base0.loopP99.toFixed(1)} ms)`,
    )

    // Memory for a 2-hour upload: resident size sampled every 50 ms while it is received and diarized.
    const two = await recording(7200)
    const rss0 = (await stats()).rss
    let peak = rss0
    let running = true
    const sampler = (async () => {
      while (running) {
        peak = Math.max(peak, (await stats()).rss)
        await new Promise((r) => setTimeout(r, 50))
      }
    })()
    const big = await post(two, 'diarized_json')
    running = false
    await sampler
    const grew = (peak - rss0) / MiB
    console.log(
      `2-hour upload (${(two.length / MiB).toFixed(0)} MiB): status ${big.status}, ${(big.wall / 1000).toFixed(1)} s, daemon RSS ${(rss0 / MiB).toFixed(0)} → peak ${(peak / MiB).toFixed(0)} MiB (+${grew.toFixed(0)} MiB)`,
    )
    console.log(`memory: RSS grows < 128 MiB over a 2-hour upload: ${grew < 128 ? 'met' : 'not met'}`)
  } finally {
    for (const p of procs) {
      p.stdin!.end()
      await new Promise((r) => p.once('exit', r))
    }
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
  console.log(`load average ${load()} at the end`)
}

/** The daemon, plus a loopback port that tells its process's CPU time and resident memory. */
async function runTandemChild(): Promise<void> {
  const { startDaemon } = await import('../../src-main/headless')
  const d = await startDaemon()
  const { monitorEventLoopDelay } = await import('node:perf_hooks')
  const loop = monitorEventLoopDelay({ resolution: 10 })
  loop.enable()
  const stats = http.createServer((req, res) => {
    if ((req.url ?? '').includes('reset')) loop.reset()
    const u = process.cpuUsage()
    // A fresh connection each time: a kept-alive one can be closed by this server just as it is reused.
    res.setHeader('connection', 'close')
    res.end(
      JSON.stringify({
        cpuMs: (u.user + u.system) / 1000,
        rss: process.memoryUsage().rss,
        loopP99: loop.percentile(99) / 1e6,
        loopMax: loop.max / 1e6,
      }),
    )
  })
  await new Promise<void>((r) => stats.listen(0, '127.0.0.1', r))
  const port = (stats.address() as { port: number }).port
  process.stdout.write(JSON.stringify({ url: d.http.url, stats: `http://127.0.0.1:${port}/` }) + '\n')
  process.stdin.resume()
  process.stdin.on('end', () => void d.stop().then(() => process.exit(0)))
}

const role = process.argv.find((a) => a.startsWith('--role='))?.slice(7)
if (role === 'tandem') await runTandemChild()
else if (role === 'asr') await runFakeAsrChild()
else await main()
