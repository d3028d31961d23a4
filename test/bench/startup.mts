// Startup benchmark: time from process spawn to /api/health answering, and RSS once ready, for the
// built headless daemon. Prints figures; asserts nothing (targets: < 1 s, < 120 MB).
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { freePort } from '../helpers/builtDaemon'

const RUNS = Number(process.env.RUNS ?? 5)
const bundle = path.resolve('out/main/index.js')
if (!fs.existsSync(bundle)) throw new Error('build first: npm run build')

function rssKb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0)
}

async function once(): Promise<{ readyMs: number; rssMb: number }> {
  const port = await freePort()
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-'))
  const t0 = performance.now()
  const child = spawn(process.execPath, [bundle, '--headless'], {
    env: { PATH: process.env.PATH, HOME: dataDir, DATA_DIR: dataDir, PORT: String(port), BIND: '127.0.0.1' },
    stdio: 'ignore',
  })
  let readyMs = -1
  for (let i = 0; i < 2000 && readyMs < 0; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/api/health`)
      if (res.ok) readyMs = performance.now() - t0
    } catch {
      await new Promise((r) => setTimeout(r, 5))
    }
  }
  const rssMb = rssKb(child.pid!) / 1024
  child.kill('SIGTERM')
  await new Promise((r) => child.once('exit', r))
  fs.rmSync(dataDir, { recursive: true, force: true })
  return { readyMs, rssMb }
}

const runs: { readyMs: number; rssMb: number }[] = []
for (let i = 0; i < RUNS; i++) runs.push(await once())
const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b)
const median = (xs: number[]) => sorted(xs)[Math.floor(xs.length / 2)] ?? NaN
const ready = runs.map((r) => r.readyMs)
const rss = runs.map((r) => r.rssMb)
console.log(`startup (${RUNS} runs of the built headless daemon)`)
console.log(
  `  ready (spawn → /api/health 200): median ${median(ready).toFixed(0)} ms, max ${Math.max(...ready).toFixed(0)} ms  [target < 1000 ms]`,
)
console.log(
  `  RSS when ready:                  median ${median(rss).toFixed(1)} MB, max ${Math.max(...rss).toFixed(1)} MB  [target < 120 MB]`,
)
