// Deep-health bench (issue 10): one round of the asr, tts and llm probes against the sim (1 s of
// silence transcribed, a short text synthesized, one llm token), through the daemon's own deep
// health. Target < 2 s when healthy. Prints figures, asserts nothing. Run: npx tsx test/bench/deepHealth.mts
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { ServicesModule } from '../../src-main/services/module'
import { ensureServiceKey } from '../../src-main/ssh/keys'
import { startDaemon } from '../helpers/daemon'
import { startFullSim } from '../sim/full'

const ROUNDS = Number(process.env.ROUNDS ?? 10)

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-deep-health-'))
const key = ensureServiceKey(path.join(dataDir, 'ssh'))
const sim = await startFullSim({ authorizedKeys: [key.publicKey] })
const daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0' }, dataDir })
try {
  const services = daemon.core.modules.find((m) => m.name === 'services') as unknown as ServicesModule
  const walls: number[] = []
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = performance.now()
    const results = await services.deepHealth.round()
    const wall = performance.now() - t0
    const failing = results.filter((r) => !r.ok).map((r) => `${r.service}: ${r.error}`)
    if (results.length !== 3 || failing.length > 0) throw new Error(`round ${i + 1} not healthy: ${failing.join('; ')}`)
    walls.push(wall)
    console.log(
      `round ${i + 1}: ${wall.toFixed(0)} ms wall (${results.map((r) => `${r.service} ${r.latency_ms} ms`).join(', ')})`,
    )
  }
  const sorted = [...walls].sort((a, b) => a - b)
  const median = sorted[Math.floor(sorted.length / 2)] as number
  console.log(
    `deep-health round of asr, tts and llm on the sim: first ${((walls[0] as number) / 1000).toFixed(3)} s, ` +
      `median ${(median / 1000).toFixed(3)} s, max ${((sorted.at(-1) as number) / 1000).toFixed(3)} s ` +
      `over ${ROUNDS} rounds (target < 2 s)`,
  )
} finally {
  await daemon.stop()
  await sim.close()
  fs.rmSync(dataDir, { recursive: true, force: true })
}
