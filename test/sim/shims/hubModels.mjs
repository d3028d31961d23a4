// Hub cache entries the way the hub CLI leaves them, for the simulated nodes: `refs/main` and
// `snapshots/<revision>/` with config.json, tokenizer.json and two safetensors shards. Bundled catalog
// models get their real config.json and their real weight size (test/fixtures/models/hub-configs.json);
// the shards are sparse (truncated, never written), so their apparent size — what `du -sb` and
// `stat -c %s` report, and what the product reads — is real while they take no disk.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const HUB_CONFIGS = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'fixtures',
  'models',
  'hub-configs.json',
)
const TOKENIZER = '{"version":"1.0"}\n'
/** The revision the simulated hub serves (a seeded cache and a later download write the same snapshot). */
export const SIM_REVISION = '5f0b02c75b57c5855da9ae460ce51323ea669d8a'

/** A bundled model's fixture entry (`config`, `weights_bytes`, `provenance`), or null for any other repo. */
export function knownModel(repo) {
  const all = JSON.parse(fs.readFileSync(HUB_CONFIGS, 'utf8')).models
  return Object.hasOwn(all, repo) ? all[repo] : null
}

/** The repo's cache folder under a hub root: `models--org--name`. */
export const modelFolder = (hub, repo) => path.join(hub, `models--${repo.replace('/', '--')}`)

/**
 * Writes a snapshot into the hub root `hub`: `config` as config.json (text, or an object written as
 * the hub writes JSON), a tokenizer, and `weightsBytes` split over two sparse shards (5/8 and 3/8, as
 * the recorded download's shards). Answers the snapshot directory.
 */
export function writeSnapshot(hub, repo, { revision, config, weightsBytes }) {
  const folder = modelFolder(hub, repo)
  const dest = path.join(folder, 'snapshots', revision)
  fs.mkdirSync(dest, { recursive: true })
  fs.mkdirSync(path.join(folder, 'refs'), { recursive: true })
  fs.writeFileSync(path.join(folder, 'refs', 'main'), revision)
  fs.writeFileSync(
    path.join(dest, 'config.json'),
    typeof config === 'string' ? config : `${JSON.stringify(config, null, 2)}\n`,
  )
  fs.writeFileSync(path.join(dest, 'tokenizer.json'), TOKENIZER)
  const first = Math.round((weightsBytes * 5) / 8)
  for (const [name, size] of [
    ['model-00001-of-00002.safetensors', first],
    ['model-00002-of-00002.safetensors', weightsBytes - first],
  ]) {
    fs.writeFileSync(path.join(dest, name), '')
    fs.truncateSync(path.join(dest, name), size)
  }
  return dest
}

/** Bytes of the small files writeSnapshot adds beside the weights, for a given config text. */
export const smallFilesBytes = (configText) => Buffer.byteLength(configText) + TOKENIZER.length
