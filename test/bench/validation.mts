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
import { benchValidations } from './lib/loadedModelProbe'

const RUNS = Number(process.env.RUNS ?? 8)

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-validate-'))
const key = ensureServiceKey(path.join(dataDir, 'ssh'))
const sim = await startFullSim({ authorizedKeys: [key.publicKey], llmModel: 'sim/first' })
const daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0' }, dataDir })
const llm = `${sim.llm.url}/v1/models`

try {
  await daemon.admin('/api/models', {
    method: 'POST',
    body: JSON.stringify({ key: 'first', name: 'first', repo: 'sim/first' }),
  })
  await daemon.admin('/api/models', {
    method: 'POST',
    body: JSON.stringify({ key: 'other', name: 'other', repo: 'sim/other', engine_args: ['--max-model-len', '8192'] }),
  })
  await benchValidations({
    llmUrl: llm,
    runs: RUNS,
    label: 'validation of a model that is not loaded (throwaway container)',
    validate: () => daemon.admin('/api/swap/other/validate', { method: 'POST', body: '{"mode":"solo"}' }),
  })
} finally {
  await daemon.stop()
  await sim.close()
  fs.rmSync(dataDir, { recursive: true, force: true })
}
