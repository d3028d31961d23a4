// Catalog bench (issue 9): time to load the effective catalog (bundled entries plus an overrides
// file of 500 custom entries with knobs), and one mutation (add + write-through) at that size.
// Prints figures, asserts nothing. Run: npx tsx test/bench/catalog.mts
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import YAML from 'yaml'
import { loadConfig } from '../../src-main/config/load'
import { createLogger, MemorySink } from '../../src-main/lib/logger'
import { ModelCatalog } from '../../src-main/models/catalog'

const CUSTOM = 500
const RUNS = Number(process.env.RUNS ?? 20)

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-catalog-'))
try {
  const config = loadConfig({ env: { DATA_DIR: dir } })
  const models = Array.from({ length: CUSTOM }, (_, i) => ({
    key: `custom-${i}`,
    name: `Custom model ${i}`,
    ...(i % 5 === 0 ? { local_path: `/data/models/m${i}`, chat_template: 'chat.jinja' } : { repo: `acme/model-${i}` }),
    mode: i % 3 === 0 ? 'both' : 'solo',
    size_bytes: 10_000_000_000 + i,
    engine_args: [
      '--max-model-len',
      '32768',
      '--gpu-memory-utilization',
      '0.7',
      '--kv-cache-dtype',
      'fp8',
      '--enable-prefix-caching',
      '--speculative-config',
      '{"method":"mtp","num_speculative_tokens":2}',
    ],
  }))
  const knobs = Object.fromEntries(models.filter((_, i) => i % 2 === 0).map((m) => [m.key, { 'max-model-len': 16384 }]))
  fs.writeFileSync(config.paths.modelsOverrides, YAML.stringify({ models, knobs }))
  const logger = createLogger({ sink: new MemorySink() })

  const loads: number[] = []
  let size = 0
  for (let r = 0; r < RUNS; r++) {
    const t0 = performance.now()
    size = new ModelCatalog({ config, logger }).list().length
    loads.push(performance.now() - t0)
  }
  const catalog = new ModelCatalog({ config, logger })
  const adds: number[] = []
  for (let r = 0; r < RUNS; r++) {
    const t0 = performance.now()
    catalog.add({ key: `bench-add-${r}`, name: 'Bench', repo: 'acme/bench', engine_args: ['--max-model-len', '4096'] })
    adds.push(performance.now() - t0)
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN
  const worst = (xs: number[]): number => Math.max(...xs)
  console.log(`catalog: ${size} entries (${CUSTOM} custom), ${RUNS} runs`)
  console.log(
    `  load (parse + validate + knobs): median ${median(loads).toFixed(1)} ms, worst ${worst(loads).toFixed(1)} ms`,
  )
  console.log(
    `  add (validate + atomic write):   median ${median(adds).toFixed(1)} ms, worst ${worst(adds).toFixed(1)} ms`,
  )
} finally {
  fs.rmSync(dir, { recursive: true, force: true })
}
