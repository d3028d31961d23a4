// Recipes bench (issue 39). (1) Listing the launcher's published recipes (upstream 358bf26, 35
// files, subfolders included, copied into the sim's node1 checkout): wall time of
// GET /api/models/recipes and the SSH round trips it takes. (2) Validating a recipe whose mod
// writes its chat template (qwen3.6-35b-a3b-fp8, mods applied in the throwaway container) while
// the loaded model keeps answering: wall time, and what it cost the loaded model (its /v1/models
// latency during validations against before them). Targets: listing under 1 s in one round trip;
// a validation under 2 s on the sim with no failed or slowed request to the loaded model (p99
// within 20 ms of the idle p99). Prints "met / not met", asserts nothing.
// Run: npx tsx test/bench/recipes.mts
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ensureServiceKey } from '../../src-main/ssh/keys'
import { startDaemon } from '../helpers/daemon'
import { startFullSim } from '../sim/full'
import { benchValidations, quantile as p } from './lib/loadedModelProbe'

const RUNS = Number(process.env.RUNS ?? 8)
const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/recipes/upstream-358bf26/recipes')

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-recipes-'))
const key = ensureServiceKey(path.join(dataDir, 'ssh'))
const sim = await startFullSim({ authorizedKeys: [key.publicKey], llmModel: 'sim/first' })
const daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0' }, dataDir })
const llm = `${sim.llm.url}/v1/models`

try {
  const recipes = path.join(sim.cluster.node1.home, 'spark-vllm-docker', 'recipes')
  fs.rmSync(recipes, { recursive: true, force: true })
  fs.cpSync(FIXTURES, recipes, { recursive: true })
  const node1 = sim.cluster.node1
  const walls: number[] = []
  const trips: number[] = []
  let listed = 0
  for (let i = 0; i < RUNS; i++) {
    const before = node1.commands.length
    const t0 = performance.now()
    const body = (await (await daemon.admin('/api/models/recipes')).json()) as { recipes: unknown[] }
    walls.push(performance.now() - t0)
    trips.push(node1.commands.length - before)
    listed = body.recipes.length
  }
  const median = p(walls, 0.5)
  console.log(
    `listing ${listed} published recipes: median ${median.toFixed(0)} ms, max ${Math.max(...walls).toFixed(0)} ms, ${Math.max(...trips)} SSH round trip(s) per listing over ${RUNS} — ${median < 1000 && Math.max(...trips) <= 1 ? 'met' : 'not met'} (target < 1 s, one round trip)`,
  )

  const imported = await daemon.admin('/api/models/recipes/qwen3.6-35b-a3b-fp8/import', { method: 'POST' })
  if (imported.status !== 200) throw new Error(`import failed: ${await imported.text()}`)
  await benchValidations({
    llmUrl: llm,
    runs: RUNS,
    label: 'validation of a recipe with a mod (chat template written by the mod, throwaway container)',
    validate: () => daemon.admin('/api/swap/qwen3.6-35b-a3b-fp8/validate', { method: 'POST', body: '{"mode":"solo"}' }),
  })
} finally {
  await daemon.stop()
  await sim.close()
  fs.rmSync(dataDir, { recursive: true, force: true })
}
