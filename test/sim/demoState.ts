import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import YAML from 'yaml'
import { MAX_SIM_NODES, type SimClusterOptions, type SimNodeName } from './cluster'

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
  key?: string
  repo?: string
  mode?: string
}

/** The bundled catalog's hub models and where they run. */
export function bundledRepos(): { key: string; repo: string; mode: string }[] {
  const doc = YAML.parse(fs.readFileSync(BUNDLED, 'utf8')) as { models?: BundledEntry[] }
  return (doc.models ?? []).flatMap((m) =>
    m.repo && m.key ? [{ key: m.key, repo: m.repo, mode: m.mode ?? 'both' }] : [],
  )
}

/** The bundled model the demo places beside the loaded one with DEMO_PLACEMENTS=two (solo, small). */
export const DEMO_SECOND_KEY = 'gemma4-26b-a4b-nvfp4'

/**
 * What each node's hub cache holds: node1 every bundled model, node2 the ones that run across
 * nodes (less DEMO_NODE1_ONLY), node3 and past every bundled model (any of them can be placed there).
 * `secondOn` also gets the demo's second model (DEMO_PLACEMENTS=two places it there).
 */
export function demoCachedModels(
  nodeCount = 2,
  secondOn: SimNodeName | null = null,
): NonNullable<SimClusterOptions['cachedModels']> {
  const all = bundledRepos()
  const node1Only: readonly string[] = DEMO_NODE1_ONLY
  const cached: Record<SimNodeName, string[]> = {
    node1: all.map((m) => m.repo),
    node2: all.filter((m) => m.mode !== 'solo' && !node1Only.includes(m.repo)).map((m) => m.repo),
  }
  for (let k = 3; k <= nodeCount; k++) cached[`node${k}`] = all.map((m) => m.repo)
  const second = all.find((m) => m.key === DEMO_SECOND_KEY)?.repo
  const onSecond = secondOn === null ? undefined : cached[secondOn]
  if (second && onSecond && !onSecond.includes(second)) onSecond.push(second)
  return cached
}

/** DEMO_NODES: how many simulated nodes (2 to MAX_SIM_NODES, default 2), or why the value is refused. */
export function demoNodeCount(raw: string | undefined): number | string {
  if (raw === undefined || raw.trim() === '') return 2
  const n = Number(raw)
  if (!/^\d+$/.test(raw.trim()) || n < 2 || n > MAX_SIM_NODES)
    return `DEMO_NODES must be a whole number from 2 to ${MAX_SIM_NODES} (got ${JSON.stringify(raw)}).`
  return n
}

/**
 * DEMO_PLACEMENTS: `one` (default: the loaded model on node1) or `two` (also the second model,
 * solo on node3 when there is one, else node2), or why the value is refused.
 */
export function demoPlacements(raw: string | undefined, nodeCount: number): { second: SimNodeName | null } | string {
  const v = (raw ?? '').trim()
  if (v === '' || v === 'one') return { second: null }
  if (v === 'two') return { second: nodeCount >= 3 ? 'node3' : 'node2' }
  return `DEMO_PLACEMENTS must be one or two (got ${JSON.stringify(raw)}).`
}

/**
 * DEMO_DOWNLOAD_MBPS: the simulated network's MB/s for downloads and copies (default 200, so a 65 GB
 * download takes about 5½ minutes and its progress, rate and ETA are seen); 0 is the fixed, fast
 * replay the test suites use. Or why the value is refused.
 */
export function demoDownloadMbps(raw: string | undefined): number | string {
  const v = (raw ?? '').trim()
  if (v === '') return 200
  const n = Number(v)
  if (!/^\d+(\.\d+)?$/.test(v) || !Number.isFinite(n))
    return `DEMO_DOWNLOAD_MBPS must be a number of MB/s, 0 for the fast replay (got ${JSON.stringify(raw)}).`
  return n
}
