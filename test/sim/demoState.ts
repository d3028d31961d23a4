import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import YAML from 'yaml'
import type { SimClusterOptions } from './cluster'

/**
 * What the demo's nodes hold when it starts (test/sim/demo.mts; the demo-state tests start from the
 * same): every bundled catalog model is in node1's hub cache with its real config.json and real-size
 * sparse weights (test/fixtures/models/hub-configs.json), so the catalog shows a fit verdict for each
 * and the loaded one is on disk. node2 holds the models that run across both nodes, except a few
 * left for the demo's download to copy over.
 */
const BUNDLED = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'resources', 'models.yaml')

/** The model the demo's llm serves at start. */
export const DEMO_LOADED_REPO = 'Qwen/Qwen3-32B-FP8'
/** On node1 only: their cards read "not on every node" until a download copies them to node2. */
export const DEMO_NODE1_ONLY = ['openai/gpt-oss-120b', 'cyankiwi/GLM-4.7-Flash-AWQ-4bit'] as const

interface BundledEntry {
  repo?: string
  mode?: string
}

/** The bundled catalog's hub models and where they run. */
export function bundledRepos(): { repo: string; mode: string }[] {
  const doc = YAML.parse(fs.readFileSync(BUNDLED, 'utf8')) as { models?: BundledEntry[] }
  return (doc.models ?? []).flatMap((m) => (m.repo ? [{ repo: m.repo, mode: m.mode ?? 'both' }] : []))
}

export function demoCachedModels(): NonNullable<SimClusterOptions['cachedModels']> {
  const all = bundledRepos()
  const node1Only: readonly string[] = DEMO_NODE1_ONLY
  return {
    node1: all.map((m) => m.repo),
    node2: all.filter((m) => m.mode !== 'solo' && !node1Only.includes(m.repo)).map((m) => m.repo),
  }
}
