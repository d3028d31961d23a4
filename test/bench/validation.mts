// Validation bench (issue 29): vLLM's parser run on a model that is NOT loaded, in a throwaway
// container of its image on the sim, while the loaded model keeps answering. Prints the wall time
// of each validation and what it cost the loaded model (its /v1/models latency during validations
// against before them). Target: a validation under 2 s on the sim; no failed or slowed request
// to the loaded model (p99 within 20 ms of the idle p99). Asserts nothing.
// Run: npx tsx test/bench/validation.mts
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ensureServiceKey } from '../../src-main/ssh/keys'
import { startDaemon } from '../helpers/daemon'
import { startFullSim } from '../sim/full'

const RUNS = Number(process.env.RUNS ?? 8)

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-validate-'))
const key = ensureServiceKey(path.join(dataDir, 'ssh'))
const sim = await startFullSim({ authorizedKeys: [key.publicKey], llmModel: 'sim/first' })
const daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0' }, dataDir })
const llm = `${sim.llm.url}/v1/models`

/** Latencies of the loaded model's /v1/models, asked every 10 ms until `until` resolves. */
async function probeWhile(until: Promise<unknown>): Promise<{ ms: number[]; failed: number }> {
  const ms: number[] = []
  let failed = 0
  let done = false
  void until.finally(() => (done = true))
  while (!done) {
    const t0 = performance.now()
    try {
      const res = await fetch(llm)
      if (!res.ok) failed++
      await res.arrayBuffer()
      ms.push(performance.now() - t0)
    } catch {
      failed++
    }
    await new Promise((r) => setTimeout(r, 10))
  }
  return { ms, failed }
}

const p = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN
}

try {
  await daemon.admin('/api/models', {
    method: 'POST',
    body: JSON.stringify({ key: 'first', name: 'first', repo: 'sim/first' }),
  })
  await daemon.admin('/api/models', {
    method: 'POST',
    body: JSON.stringify({ key: 'other', name: 'other', repo: 'sim/other', engine_args: ['--max-model-len', '8192'] }),
  })
  const idle = await probeWhile(new Promise((r) => setTimeout(r, 1000)))
  const walls: number[] = []
  const during: number[] = []
  let failed = 0
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now()
    const validation = daemon.admin('/api/swap/other/validate', { method: 'POST', body: '{"mode":"solo"}' })
    const probe = probeWhile(validation)
    const body = (await (await validation).json()) as { ok: boolean; stage: string; error: string | null }
    walls.push(performance.now() - t0)
    if (!body.ok) throw new Error(`validation ${i} refused: ${body.stage} ${body.error}`)
    const seen = await probe
    during.push(...seen.ms)
    failed += seen.failed
  }
  const median = p(walls, 0.5)
  console.log(
    `validation of a model that is not loaded (throwaway container): median ${median.toFixed(0)} ms, max ${Math.max(...walls).toFixed(0)} ms over ${RUNS} — ${median < 2000 ? 'met' : 'not met'} (target < 2 s on the sim)`,
  )
  const idleP99 = p(idle.ms, 0.99)
  const duringP99 = p(during, 0.99)
  console.log(
    `loaded model's /v1/models: idle p99 ${idleP99.toFixed(1)} ms, during validations p99 ${duringP99.toFixed(1)} ms over ${during.length} requests, ${failed} failed — ${failed === 0 && duringP99 - idleP99 < 20 ? 'met' : 'not met'} (no failure, p99 within 20 ms)`,
  )
} finally {
  await daemon.stop()
  await sim.close()
  fs.rmSync(dataDir, { recursive: true, force: true })
}
