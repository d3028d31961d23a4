// Simulated `uvx hf download <repo>`: replays the recorded Xet progress output of the current hub CLI
// (test/fixtures/downloads/hf-xet-progress.raw.txt) on stderr, byte for byte, paced by the node's
// knobs, and writes the model into the hub cache (HF_HOME honoured) as sparse files: a bundled
// catalog model with its real config.json and weight size (shims/hubModels.mjs), any other repo with
// the size the recording declares. Knobs (environment, or a file of that name in $SIM_STATE):
// download_bytes (model size; the recording is redrawn for it in the same format), download_mbps
// (the network's MB/s: the download takes its bytes' time at that rate, prints it, and redraws about
// once a second; see pacing.mjs), else download_steps (pauses spread over the replay) and
// download_delay (seconds per pause). Fault files: hub_down, missing_repos (one repo per line).
import fs from 'node:fs'
import path from 'node:path'
import { knownModel, modelFolder, SIM_REVISION, smallFilesBytes, writeSnapshot } from './hubModels.mjs'
import { pacedRate, xetPaced } from './pacing.mjs'
import { declaredTotal, knob, rescaleFrame, sleep, XET_RECORDING, xetFrames } from './recordings.mjs'

const die = (msg, code = 1) => {
  process.stderr.write(msg + '\n')
  process.exit(code)
}
const [tool, verb, repo] = process.argv.slice(2)
if (tool !== 'hf' || verb !== 'download' || !repo) die('usage (simulated): uvx hf download <repo>', 2)
const state = process.env.SIM_STATE ?? ''
if (
  !/^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*$/.test(repo) ||
  repo.includes('..') ||
  repo.includes('--')
)
  die(
    `huggingface_hub.errors.HFValidationError: Repo id must use alphanumeric chars or '-', '_', '.', '--' and '..' are forbidden: '${repo}'.`,
  )
if (fs.existsSync(path.join(state, 'hub_down')))
  die(
    `requests.exceptions.ConnectionError: (MaxRetryError("HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded with url: /api/models/${repo}/revision/main"))`,
  )
const missing = fs.existsSync(path.join(state, 'missing_repos'))
  ? fs.readFileSync(path.join(state, 'missing_repos'), 'utf8').split('\n')
  : []
if (missing.includes(repo))
  die(
    `huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error. Repository Not Found for url: https://huggingface.co/api/models/${repo}/revision/main.`,
  )

const recording = fs.readFileSync(XET_RECORDING, 'utf8')
const declared = declaredTotal(recording)
const known = knownModel(repo)
const config = known
  ? `${JSON.stringify(known.config, null, 2)}\n`
  : '{"architectures":["SimForCausalLM"],"model_type":"sim","num_hidden_layers":24}\n'
// A bundled model downloads its real size; the knob still overrides it.
const natural = known ? known.weights_bytes + smallFilesBytes(config) : declared
const total = Math.round(Number(knob('SIM_MODEL_BYTES', 'download_bytes', String(natural))))
const scale = total / declared
const steps = Math.max(0, Math.floor(Number(knob('SIM_DOWNLOAD_STEPS', 'download_steps', '10'))))
const delay = Number(knob('SIM_DOWNLOAD_DELAY', 'download_delay', '0.1'))

const hub = path.join(process.env.HF_HOME || path.join(process.env.HOME ?? '', '.cache', 'huggingface'), 'hub')
const folder = modelFolder(hub, repo)
const snapshot = process.env.SIM_SNAPSHOT ?? SIM_REVISION
const incomplete = path.join(folder, 'blobs', `${snapshot}.incomplete`)
fs.mkdirSync(path.dirname(incomplete), { recursive: true })
fs.mkdirSync(path.join(folder, 'refs'), { recursive: true })
fs.writeFileSync(path.join(folder, 'refs', 'main'), snapshot)
fs.writeFileSync(incomplete, '')

const rate = pacedRate()
if (rate !== null) {
  // Paced: each redraw when its bytes have arrived at the rate, measured from the start.
  const start = Date.now()
  for (const { text, at, written } of xetPaced(recording, { total, rate })) {
    await sleep(at - (Date.now() - start) / 1000)
    process.stderr.write(text)
    if (written !== null) fs.truncateSync(incomplete, Math.min(total, Math.round(written)))
  }
} else {
  // The pauses fall evenly over the redraws, so steps × delay is the replay's length.
  const frames = xetFrames(recording)
  for (const [i, { frame, written }] of frames.entries()) {
    process.stderr.write(rescaleFrame(frame, scale))
    if (written !== null) fs.truncateSync(incomplete, Math.min(total, Math.round(written * scale)))
    const pauses = Math.floor(((i + 1) * steps) / frames.length) - Math.floor((i * steps) / frames.length)
    if (pauses > 0) await sleep(pauses * delay)
  }
}

// The recording's four files: config.json, a tokenizer and two shards holding the rest of the size.
const dest = writeSnapshot(hub, repo, {
  revision: snapshot,
  config,
  weightsBytes: Math.max(0, total - smallFilesBytes(config)),
})
fs.rmSync(incomplete, { force: true })
process.stdout.write(dest + '\n')
