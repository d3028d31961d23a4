// Speaker-assignment bench (issue 33 #3): time of groupWords — giving each asr word to a diarizer
// turn and grouping the blocks — for the word and turn counts of 0.5, 1 and 2 GiB of audio: all at
// once, and sliced as the daemon runs it, where the longest slice is how long /api/health and every
// other request wait. Sizes: 16 kHz mono 16-bit PCM (what recorders and the asr commonly use) is 32,000 B/s, so
// 1 GiB ≈ 9.3 h; speech at 150 words a minute is 9,000 words an hour; a speaker turn every 5 s on
// average is 720 turns an hour, some overlapping (crosstalk). Target: the longest slice < 100 ms
// at every size. Then through the daemon (a child, in front of the fake asr in another child):
// /api/health latency while /api/audio/transcribe-with-speakers groups the fake's scripted
// dialogue for the same durations (a small WAV whose header says 1 byte a second stands for the
// long recording: the fake reads the duration from it). That figure includes parsing the asr's
// answers (JSON and schema), not only the grouping. Prints figures, asserts nothing; loopback only.
// Run: npx tsx test/bench/speakerWords.mts
import type { ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort, runDaemonChild, runFakeAsrChild, spawnChild } from './lib/child'
import { groupWords, groupWordsWork, type SpeakerTurn, type TimedWord } from '../../src-main/gateway/audio/words'

const RUNS = Number(process.env.RUNS ?? 5)
const GIB = 1024 ** 3
const BYTES_PER_S = 32_000
const WORDS_PER_H = 9_000
const TURN_S = 5

/** Deterministic PRNG (mulberry32): the same recording every run. */
function prng(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function recording(seconds: number): { words: TimedWord[]; turns: SpeakerTurn[] } {
  const rnd = prng(33)
  const words: TimedWord[] = []
  const step = 3600 / WORDS_PER_H
  for (let t = 0; t < seconds;) {
    const next = t + step * (0.5 + rnd())
    words.push({
      word: rnd() < 0.1 ? '.' : `w${words.length % 997}`,
      start: t,
      end: t + (next - t) * (0.3 + 0.6 * rnd()),
    })
    t = next
  }
  const turns: SpeakerTurn[] = []
  for (let t = 0; t < seconds; t += TURN_S * (0.5 + rnd())) {
    // Turns start slightly early or late: gaps and overlaps both occur.
    turns.push({ start: t + rnd() - 0.5, end: t + TURN_S * (0.4 + rnd()), speaker: `spk_${Math.floor(rnd() * 4)}` })
  }
  return { words, turns }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN

/** CPU time of this thread (ms): what the work costs on a free core, whatever else the machine runs. */
const threadCpuMs = (): number => {
  const u = process.threadCpuUsage()
  return (u.user + u.system) / 1000
}

interface Timed {
  wall: number
  cpu: number
}

/** Runs the grouping as the daemon does (sliced); the longest slice by wall and by thread CPU time. */
function sliced(words: TimedWord[], turns: SpeakerTurn[]): { longest: Timed; blocks: number } {
  const work = groupWordsWork(words, turns)
  const longest: Timed = { wall: 0, cpu: 0 }
  for (;;) {
    const [t, c] = [performance.now(), threadCpuMs()]
    const step = work.next()
    longest.wall = Math.max(longest.wall, performance.now() - t)
    longest.cpu = Math.max(longest.cpu, threadCpuMs() - c)
    if (step.done) return { longest, blocks: step.value.segments.length }
  }
}

async function direct(): Promise<string[]> {
  const rows: string[] = []
  let allMet = true
  for (const gib of [0.5, 1, 2]) {
    const seconds = (gib * GIB) / BYTES_PER_S
    const { words, turns } = recording(seconds)
    const whole: Timed[] = []
    const longest: Timed[] = []
    let blocks = 0
    for (let r = 0; r < RUNS; r++) {
      const [t, c] = [performance.now(), threadCpuMs()]
      groupWords(words, turns)
      whole.push({ wall: performance.now() - t, cpu: threadCpuMs() - c })
      const s = sliced(words, turns)
      longest.push(s.longest)
      blocks = s.blocks
    }
    // The event loop waits for the longest slice: on a free core, its CPU time.
    const slice = median(longest.map((l) => l.cpu))
    const met = slice < 100
    allMet &&= met
    const fmt = (xs: Timed[]): string =>
      `${median(xs.map((x) => x.cpu)).toFixed(1)} / ${median(xs.map((x) => x.wall)).toFixed(1)}`
    rows.push(
      `| ${gib} | ${(seconds / 3600).toFixed(1)} | ${words.length} | ${turns.length} | ${blocks} | ${fmt(whole)} | ${fmt(longest)} | ${met ? 'met' : 'not met'} |`,
    )
  }
  return [
    `Medians of ${RUNS} runs; "cpu / wall" ms, cpu being this thread's CPU time (wall adds waiting for a core).`,
    '| audio GiB | hours | words | turns | blocks | all at once, cpu / wall ms | longest slice, cpu / wall ms | event loop blocked < 100 ms |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
    `speaker assignment holds the event loop < 100 ms at 0.5/1/2 GiB (longest slice, CPU): ${allMet ? 'met' : 'not met'}`,
  ]
}

const SELF = fileURLToPath(import.meta.url)
const ROOT = path.resolve(path.dirname(SELF), '../..')

/** A 16-bit mono WAV header claiming 1 byte a second, then `seconds` bytes: the fake asr reads it as that long. */
function longWav(seconds: number): Buffer {
  const data = Math.round(seconds)
  const buf = Buffer.alloc(44 + data)
  buf.write('RIFF', 0, 'ascii')
  buf.writeUInt32LE(36 + data, 4)
  buf.write('WAVEfmt ', 8, 'ascii')
  buf.writeUInt32LE(16, 16)
  buf.writeUInt16LE(1, 20)
  buf.writeUInt16LE(1, 22)
  buf.writeUInt32LE(16_000, 24)
  buf.writeUInt32LE(1, 28)
  buf.writeUInt16LE(2, 32)
  buf.writeUInt16LE(16, 34)
  buf.write('data', 36, 'ascii')
  buf.writeUInt32LE(data, 40)
  return buf
}

const pct = (xs: number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? NaN

async function throughDaemon(): Promise<string[]> {
  const asr = await spawnChild(SELF, ['--role=asr'], { cwd: ROOT })
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-words-'))
  const procs: ChildProcess[] = [asr.proc]
  try {
    const tandem = await spawnChild(SELF, ['--role=tandem'], {
      cwd: ROOT,
      env: {
        PORT: String(await freePort()),
        BIND: '127.0.0.1',
        DATA_DIR: dataDir,
        NODE2_HOST: '127.0.0.1',
        NODE2_USER: 'bench',
        ASR_PORT: String(asr.info.port),
        RATE_SOURCES: 'http://127.0.0.1:9',
        LOG_LEVEL: 'warn',
      },
    })
    procs.push(tandem.proc)
    const base = tandem.info.url as string
    const rows: string[] = []
    for (const gib of [0.5, 1, 2]) {
      const form = new FormData()
      form.append('file', new Blob([longWav((gib * GIB) / BYTES_PER_S)]), 'long.wav')
      const t0 = performance.now()
      let done = false
      const call = fetch(`${base}/api/audio/transcribe-with-speakers`, { method: 'POST', body: form })
        .then(async (r) => ({ status: r.status, body: (await r.json()) as { segments?: unknown[] } }))
        .finally(() => (done = true))
      const health: number[] = []
      while (!done && health.length < 100_000) {
        const t = performance.now()
        await fetch(`${base}/api/health`).then((r) => r.arrayBuffer())
        health.push(performance.now() - t)
      }
      const answer = await call
      const p99 = pct(health, 0.99)
      rows.push(
        `| ${gib} | ${answer.status} | ${answer.body.segments?.length ?? 0} | ${((performance.now() - t0) / 1000).toFixed(1)} | ${health.length} | ${pct(health, 0.5).toFixed(1)} | ${p99.toFixed(1)} | ${Math.max(...health).toFixed(1)} | ${p99 < 100 ? 'met' : 'not met'} |`,
      )
    }
    return [
      '| audio GiB (as duration) | status | blocks | request s | health calls | health p50 ms | health p99 ms | health max ms | /api/health p99 < 100 ms |',
      '|---|---|---|---|---|---|---|---|---|',
      ...rows,
    ]
  } finally {
    for (const p of procs) {
      p.stdin!.end()
      await new Promise((r) => p.once('exit', r))
    }
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

async function main(): Promise<void> {
  const load = (): string =>
    os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')
  console.log(`load average ${load()} on ${os.cpus().length} cores (wall times include waiting for a core)`)
  for (const line of await direct()) console.log(line)
  console.log('')
  for (const line of await throughDaemon()) console.log(line)
  console.log(`load average ${load()} at the end`)
}

const role = process.argv.find((a) => a.startsWith('--role='))?.slice(7)
if (role === 'tandem') await runDaemonChild()
else if (role === 'asr') await runFakeAsrChild()
else await main()
