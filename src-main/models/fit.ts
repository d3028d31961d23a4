import type { FitEstimate, RunMode } from '../contract/models'
import type { NodeName } from '../contract/schemas'
import type { Logger } from '../lib/logger'
import type { NodesModule } from '../nodes/module'
import { shq } from '../ssh/quote'
import { hubCacheDir } from './disk'
import { LaunchRefused, layoutArgs, nodesForMode } from './launch'
import type { CatalogEntry, CatalogReader } from './types'

/**
 * "Will it fit": what a model needs in memory on each node (weights plus the KV cache for one
 * sequence of max-model-len), against the node's live RAM × gpu-memory-utilization. A figure
 * that cannot be found leaves the verdict `unknown` and a note saying what was missing.
 */

/** vLLM's own default when the entry sets no gpu-memory-utilization. */
export const DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
/** Less headroom than this (a share of the budget) is "tight". */
export const TIGHT_HEADROOM = 0.1
const READ_TIMEOUT_MS = 15_000
const MAX_CONFIG_BYTES = 1024 * 1024
const MAX_INDEX_BYTES = 16 * 1024 * 1024

type Verdict = FitEstimate['verdict']

/** The parts of a model's config.json the KV cache size depends on. */
export interface KvShape {
  readonly layers: number
  readonly kvHeads: number
  readonly headDim: number
  /** Bytes per cached element in the model's own dtype (the FP8 knob overrides it). */
  readonly dtypeBytes: number
  readonly maxPositions: number | null
  /** Latent attention (MLA): each layer caches one latent vector per token, not a key and a value. */
  readonly latent?: true
}

const DTYPE_BYTES: Record<string, number> = { float32: 4, float16: 2, bfloat16: 2, float8: 1 }

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : null)

/**
 * Reads the KV shape from a config.json (the text config of a multimodal model). Only layers that
 * keep a KV cache count: hybrid models list their layer kinds (`layer_types`,
 * `hybrid_override_pattern`) or put full attention every `full_attention_interval` layers.
 */
export function kvShape(config: unknown): KvShape | null {
  const root = (config ?? {}) as Record<string, unknown>
  const c = textConfig(root)
  const total = num(c.num_hidden_layers)
  const heads = num(c.num_attention_heads)
  if (total === null || heads === null) return null
  const common = {
    layers: cachedLayers(c, total),
    dtypeBytes: dtypeBytesOf(c, root),
    maxPositions: num(c.max_position_embeddings),
  }
  // MLA (DeepSeek, GLM-4.7-Flash): the compressed KV latent plus the decoupled rope key, shared by all heads.
  const latentRank = num(c.kv_lora_rank)
  if (latentRank !== null)
    return { ...common, kvHeads: 1, headDim: latentRank + (num(c.qk_rope_head_dim) ?? 0), latent: true }
  const headDim = headDimOf(c, heads)
  if (headDim === null) return null
  return { ...common, kvHeads: num(c.num_key_value_heads) ?? heads, headDim }
}

/** A multimodal model's language part keeps its own config under `text_config`. */
function textConfig(root: Record<string, unknown>): Record<string, unknown> {
  return (typeof root.text_config === 'object' && root.text_config !== null ? root.text_config : root) as Record<
    string,
    unknown
  >
}

/** Layers with a KV cache: attention layers of a hybrid model, every layer otherwise. */
function cachedLayers(c: Record<string, unknown>, total: number): number {
  if (Array.isArray(c.layer_types)) return c.layer_types.filter((t) => /attention/.test(String(t))).length
  if (typeof c.hybrid_override_pattern === 'string') return c.hybrid_override_pattern.split('*').length - 1
  if (num(c.full_attention_interval) !== null) return Math.floor(total / (c.full_attention_interval as number))
  return total
}

/** `head_dim`, or the hidden size shared evenly by the attention heads when the config omits it. */
function headDimOf(c: Record<string, unknown>, heads: number): number | null {
  const hidden = num(c.hidden_size)
  return num(c.head_dim) ?? (hidden !== null ? hidden / heads : null)
}

/** The text config's dtype wins over the top level's; bfloat16 when neither names one. */
function dtypeBytesOf(c: Record<string, unknown>, root: Record<string, unknown>): number {
  const dtype = String(c.torch_dtype ?? c.dtype ?? root.torch_dtype ?? root.dtype ?? 'bfloat16')
  return DTYPE_BYTES[dtype] ?? 2
}

/** Keys and values for every cached layer, for `tokens` tokens. */
export function kvCacheBytes(shape: KvShape, tokens: number, fp8: boolean): number {
  const vectors = shape.latent ? 1 : 2
  return vectors * shape.layers * shape.kvHeads * shape.headDim * (fp8 ? 1 : shape.dtypeBytes) * tokens
}

/** A node's verdict from its need and budget. */
export function verdictFor(need: number | null, budget: number | null): Verdict {
  if (need === null || budget === null) return 'unknown'
  if (need > budget) return 'no_fit'
  return (budget - need) / budget < TIGHT_HEADROOM ? 'tight' : 'fits'
}

/** A node's verdict, where weights alone beyond the budget settle it even when the KV cache is unknown. */
function nodeVerdict(need: number | null, weights: number | null, budget: number | null): Verdict {
  if (need === null && weights !== null && budget !== null && weights > budget) return 'no_fit'
  return verdictFor(need, budget)
}

/** One node's part of bytes split evenly across the nodes of a tensor-parallel layout. */
function evenShare(bytes: number | null, nodes: number): number | null {
  return bytes === null ? null : Math.ceil(bytes / nodes)
}

/** The model's verdict: one node that cannot hold it decides; otherwise the least certain one. */
export function overallVerdict(verdicts: readonly Verdict[]): Verdict {
  for (const v of ['no_fit', 'unknown', 'tight'] as const) if (verdicts.includes(v)) return v
  return 'fits'
}

export interface FitOptions {
  readonly catalog: CatalogReader
  readonly nodes: Pick<NodesModule, 'pool' | 'targets' | 'hardware'>
  readonly logger: Logger
  /** Every configured node, node1 first (a mode's nodes are taken from the front). */
  readonly nodeNames: () => readonly NodeName[]
  /** Weights on a node's disk, or null when not there (or not known). */
  readonly diskBytes: (key: string, node: NodeName) => Promise<number | null>
  /**
   * Memory held on a node by what a new placement there would not stop (speech services, other
   * processes), given the node's live GPU processes; null when unknown. Placements are not counted:
   * the new one displaces whatever is placed on its nodes.
   */
  readonly othersOn?: (node: NodeName, snapshot: HardwareSnapshot | null) => number | null
}

type HardwareSnapshot = Awaited<ReturnType<NodesModule['hardware']['snapshot']>>

/** vLLM's own refusal (ModelConfig's check against the parallel config) when tensor parallel k does not divide the heads. */
export function headsRefusal(config: unknown, tp: number): string | null {
  if (tp <= 1) return null
  const heads = num(textConfig((config ?? {}) as Record<string, unknown>).num_attention_heads)
  if (heads === null || heads % tp === 0) return null
  return `Total number of attention heads (${heads}) must be divisible by tensor parallel size (${tp}).`
}

/** What the hub cache (or a local model's directory) on node1 says about a model. */
interface RemoteFacts {
  config: unknown
  indexTotal: number | null
  error: string | null
}

export class FitEstimator {
  constructor(private readonly opts: FitOptions) {}

  /**
   * The model on `nodes` (head first), or on the nodes its mode means (solo: node1; cluster: node1
   * and the next ones its parallelism needs) when none are given.
   */
  async estimate(key: string, mode?: RunMode, nodes?: readonly NodeName[]): Promise<FitEstimate> {
    const entry = this.opts.catalog.get(key)
    const runMode: RunMode = nodes !== undefined ? (nodes.length > 1 ? 'cluster' : 'solo') : this.modeOf(entry, mode)
    const notes: string[] = []
    if (entry.def.mode !== 'both' && entry.def.mode !== runMode)
      notes.push(`the catalog declares this model ${entry.def.mode === 'cluster' ? 'cluster-only' : 'solo-only'}`)
    // The layout a placement would launch (launch.ts): the nodes it spans share weights and KV cache.
    let names: NodeName[]
    try {
      names = nodes !== undefined ? [...nodes] : nodesForMode(entry.launchArgs, runMode, this.opts.nodeNames())
      layoutArgs(entry.launchArgs, names, null)
    } catch (err) {
      if (!(err instanceof LaunchRefused)) throw err
      return {
        mode: runMode,
        verdict: 'no_fit',
        nodes: [],
        notes: [...notes, `does not fit this cluster: ${err.message}`],
      }
    }
    const [snapshot, facts, weights] = await Promise.all([
      this.opts.nodes.hardware.snapshot().catch((err: unknown) => {
        notes.push(`live RAM could not be read: ${(err as Error).message}`)
        return null
      }),
      this.remoteFacts(entry, names[0] ?? 'node1'),
      this.diskWeights(key, names),
    ])
    const heads = headsRefusal(facts.config, names.length)
    if (heads !== null) return { mode: runMode, verdict: 'no_fit', nodes: [], notes: [...notes, heads] }
    const totalWeights = this.totalWeights(entry, weights, facts, notes)
    const kvTotal = this.kvTotal(entry, facts, notes)
    const util = entry.effectiveKnobs['gpu-memory-utilization'] ?? DEFAULT_GPU_MEMORY_UTILIZATION
    if (entry.effectiveKnobs['gpu-memory-utilization'] === undefined)
      notes.push(`gpu-memory-utilization not set: the engine default ${DEFAULT_GPU_MEMORY_UTILIZATION} is assumed`)
    if (names.length > 1)
      notes.push(`weights and KV cache split evenly across ${names.join(' and ')} (tensor parallel ${names.length})`)
    const share = { weights: evenShare(totalWeights, names.length), kv: evenShare(kvTotal, names.length) }
    const rows = names.map((node) => this.nodeRow(node, snapshot, share, util, notes))
    return { mode: runMode, verdict: overallVerdict(rows.map((n) => n.verdict)), nodes: rows, notes }
  }

  /** The model's tensor-parallel refusal on `nodes` from its config.json on the head, or null. */
  async headsCheck(key: string, nodes: readonly NodeName[]): Promise<string | null> {
    if (nodes.length <= 1) return null
    const facts = await this.remoteFacts(this.opts.catalog.get(key), nodes[0] ?? 'node1')
    return headsRefusal(facts.config, nodes.length)
  }

  private modeOf(entry: CatalogEntry, mode: RunMode | undefined): RunMode {
    return mode ?? (entry.def.mode === 'cluster' ? 'cluster' : 'solo')
  }

  /**
   * One node's row: its share against gpu-memory-utilization × RAM, and that reservation against
   * what the node's other residents leave free (vLLM refuses to start when the free memory at
   * start is below utilization × total).
   */
  private nodeRow(
    node: NodeName,
    snapshot: HardwareSnapshot | null,
    share: { weights: number | null; kv: number | null },
    util: number,
    notes: string[],
  ): FitEstimate['nodes'][number] {
    const hw = snapshot?.[node]
    const ram = hw?.status === 'ok' && hw.ram ? hw.ram.total_bytes : null
    if (ram === null && hw) notes.push(`${node}: live RAM unknown (${hw.status})`)
    const need = share.weights === null || share.kv === null ? null : share.weights + share.kv
    const budget = ram === null ? null : Math.floor(ram * util)
    const others = this.opts.othersOn?.(node, snapshot) ?? null
    const crowded = crowdedOut(node, { ram, budget, others, util })
    if (crowded !== null) notes.push(crowded)
    const verdict = crowded !== null ? 'no_fit' : nodeVerdict(need, share.weights, budget)
    return {
      node,
      weights_bytes: share.weights,
      kv_cache_bytes: share.kv,
      need_bytes: need,
      budget_bytes: budget,
      ram_total_bytes: ram,
      other_bytes: others,
      verdict,
    }
  }

  private async diskWeights(key: string, names: readonly NodeName[]): Promise<(number | null)[]> {
    return Promise.all(names.map((n) => this.opts.diskBytes(key, n).catch(() => null)))
  }

  private totalWeights(
    entry: CatalogEntry,
    onDisk: (number | null)[],
    facts: RemoteFacts,
    notes: string[],
  ): number | null {
    const disk = onDisk.find((b): b is number => b !== null && b > 0)
    if (disk !== undefined) {
      notes.push('weights: size on disk')
      return disk
    }
    if (entry.def.size_bytes !== undefined) {
      notes.push('weights: approximate size from the catalog (not on disk)')
      return entry.def.size_bytes
    }
    if (facts.indexTotal !== null) {
      notes.push("weights: total from the repo's model.safetensors.index.json in the hub cache")
      return facts.indexTotal
    }
    notes.push('weights: unknown (not on disk, no catalog size, no safetensors index in the hub cache)')
    return null
  }

  private kvTotal(entry: CatalogEntry, facts: RemoteFacts, notes: string[]): number | null {
    const shape = kvShape(facts.config)
    if (shape === null) {
      notes.push(`KV cache: unknown (${facts.error ?? 'config.json lacks layers, heads or head size'})`)
      return null
    }
    const tokens = entry.effectiveKnobs['max-model-len'] ?? shape.maxPositions
    if (tokens === null) {
      notes.push('KV cache: unknown (no max-model-len and no max_position_embeddings)')
      return null
    }
    const fp8 = entry.effectiveKnobs['fp8-kv-cache'] === true
    const bytes = fp8 ? 1 : shape.dtypeBytes
    notes.push(
      shape.latent
        ? `KV cache: ${tokens} tokens × ${shape.layers} layers × ${shape.headDim} latent dims × ${bytes} bytes (latent attention)`
        : `KV cache: ${tokens} tokens × ${shape.layers} layers × ${shape.kvHeads} KV heads × ${shape.headDim} head dim × ${bytes} bytes × 2 (K and V)`,
    )
    return kvCacheBytes(shape, tokens, fp8)
  }

  /** config.json and the safetensors index total, read in one bounded command on the head. */
  private async remoteFacts(entry: CatalogEntry, head: NodeName): Promise<RemoteFacts> {
    const target = this.opts.nodes.targets[head]
    if (!target) return { config: null, indexTotal: null, error: `${head} is not configured` }
    try {
      const r = await this.opts.nodes.pool.exec(target, factsCommand(entry), { timeoutMs: READ_TIMEOUT_MS })
      const [, config = '', index = ''] = r.stdout.split(/^@@(?:config|index)$/m)
      const parsedConfig = parseJson(config)
      const indexDoc = parseJson(index) as { metadata?: { total_size?: unknown } } | null
      return {
        config: parsedConfig,
        indexTotal: num(indexDoc?.metadata?.total_size),
        error: parsedConfig === null ? `config.json not found on ${head}` : null,
      }
    } catch (err) {
      this.opts.logger.warn('fit: reading model facts failed', { key: entry.def.key, error: (err as Error).message })
      return { config: null, indexTotal: null, error: `${head} could not be read: ${(err as Error).message}` }
    }
  }
}

/** Why what other processes hold leaves less free than the engine reserves at start, or null when it does not. */
function crowdedOut(
  node: NodeName,
  m: { ram: number | null; budget: number | null; others: number | null; util: number },
): string | null {
  const { ram, budget, others } = m
  if (ram === null || budget === null || others === null || others <= 0 || budget <= ram - others) return null
  return `${node}: ${gbText(others)} is held by other processes (speech services, other work), so ${m.util} × ${gbText(ram)} = ${gbText(budget)} cannot be reserved`
}

function gbText(bytes: number): string {
  return `${(bytes / 1e9).toFixed(1)} GB`
}

function parseJson(text: string): unknown {
  const t = text.trim()
  if (t === '') return null
  try {
    return JSON.parse(t) as unknown
  } catch {
    return null
  }
}

/** Prints `@@config`, the model's config.json, `@@index`, its safetensors index (each bounded). */
export function factsCommand(entry: CatalogEntry): string {
  const { repo, local_path: local } = entry.def
  const dirs = local !== undefined ? shq(local) : `${hubCacheDir(repo as string).word}/snapshots/*`
  return [
    `for s in ${dirs}; do`,
    '  [ -f "$s/config.json" ] || continue',
    `  echo '@@config'; head -c ${String(MAX_CONFIG_BYTES)} "$s/config.json"; echo`,
    `  echo '@@index'; [ -f "$s/model.safetensors.index.json" ] && head -c ${String(MAX_INDEX_BYTES)} "$s/model.safetensors.index.json"`,
    '  break',
    'done; true',
  ].join('\n')
}
