// Swap bench (issue 9): orchestration overhead of a model swap on the sim, excluding the simulated
// load delay: validation in the llm container, stopping the engine, the launcher, polling until the
// model answers. Target < 2 s. Prints figures, asserts nothing. Run: npx tsx test/bench/swap.mts
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ensureServiceKey } from '../../src-main/ssh/keys'
import { startDaemon } from '../helpers/daemon'
import { startFullSim } from '../sim/full'

const RUNS = Number(process.env.RUNS ?? 6)
const LOAD_MS = Number(process.env.LOAD_MS ?? 400)

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-swap-'))
const key = ensureServiceKey(path.join(dataDir, 'ssh'))
const sim = await startFullSim({ authorizedKeys: [key.publicKey], llmModel: 'sim/first' })
const daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0' }, dataDir })
try {
  for (const [k, repo] of [
    ['first', 'sim/first'],
    ['second', 'sim/second'],
  ])
    await daemon.admin('/api/models', { method: 'POST', body: JSON.stringify({ key: k, name: k, repo }) })
  sim.llm.setLoadDelay(LOAD_MS)
  const overheads: number[] = []
  for (let i = 0; i < RUNS; i++) {
    const target = i % 2 === 0 ? 'second' : 'first'
    const t0 = performance.now()
    const res = await daemon.admin(`/api/swap/${target}`, { method: 'POST', body: '{"mode":"solo"}' })
    const { job_id } = (await res.json()) as { job_id: string }
    const job = await daemon.core.jobs.wait(job_id)
    const total = performance.now() - t0
    if (job.state !== 'succeeded') throw new Error(`swap ${i} ${job.state}: ${job.error}`)
    overheads.push(total - LOAD_MS)
    console.log(`swap ${i + 1} → ${target}: ${total.toFixed(0)} ms total, ${(total - LOAD_MS).toFixed(0)} ms overhead`)
  }
  const sorted = [...overheads].sort((a, b) => a - b)
  const median = sorted[Math.floor(sorted.length / 2)] as number
  console.log(
    `swap orchestration overhead (simulated load of ${LOAD_MS} ms excluded): median ${(median / 1000).toFixed(2)} s, ` +
      `max ${((sorted.at(-1) as number) / 1000).toFixed(2)} s over ${RUNS} swaps (target < 2 s)`,
  )
} finally {
  await daemon.stop()
  await sim.close()
  fs.rmSync(dataDir, { recursive: true, force: true })
}
