import { describe, expect, it } from 'vitest'
import type { ModelDef } from '../../../src-main/contract/models'
import { hardwareSnapshot, type HardwareSnapshot, type NodeHardware } from '../../../src-main/contract/nodes'
import type { Knobs, NodeName } from '../../../src-main/contract/schemas'
import { notFound } from '../../../src-main/contract/errors'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { FitEstimator, factsCommand, kvCacheBytes, kvShape, type FitOptions } from '../../../src-main/models/fit'
import { effectiveKnobs, knobsToArgs } from '../../../src-main/models/knobs'
import type { CatalogEntry } from '../../../src-main/models/types'

const GB = 1_000_000_000
const LLAMA_CONFIG = {
  num_hidden_layers: 80,
  num_attention_heads: 64,
  num_key_value_heads: 8,
  hidden_size: 8192,
  torch_dtype: 'bfloat16',
  max_position_embeddings: 131072,
}

function entry(def: Partial<ModelDef> & { key: string }, knobs: Knobs = {}): CatalogEntry {
  const full = { name: def.key, engine_args: [], mode: 'solo', ...def } as ModelDef
  return {
    def: full,
    tags: ['custom'],
    bundled: false,
    effectiveKnobs: effectiveKnobs(full.engine_args, knobs),
    launchArgs: knobsToArgs(full.engine_args, knobs),
  }
}

const ok = (node: string, total: number): NodeHardware => ({
  node,
  status: 'ok',
  host: '127.0.0.1',
  hostname: node,
  uptime_s: 1,
  load: [],
  cores: 20,
  ram: { total_bytes: total, used_bytes: 0, available_bytes: total },
  disk: null,
  gpu: null,
  gpu_unified_memory: true,
  memory_pool: null,
  interface: null,
  mac: null,
  cluster_ip: null,
  probed_at: 0,
  probe_ms: 1,
})

interface Setup {
  entries: CatalogEntry[]
  remote?: { config?: unknown; index?: unknown } | Error
  disk?: Partial<Record<NodeName, number>>
  node2?: 'ok' | 'unreachable'
  ram?: number
  hardwareFails?: boolean
  /** Memory other processes hold per node. */
  others?: Partial<Record<NodeName, number>>
}

function estimator(s: Setup): { fit: FitEstimator; commands: string[] } {
  const commands: string[] = []
  const snapshot: HardwareSnapshot = hardwareSnapshot(
    ok('node1', s.ram ?? 128 * GB),
    s.node2 === 'unreachable'
      ? {
          node: 'node2',
          status: 'unreachable',
          host: 'h',
          error: 'refused',
          error_kind: 'unreachable',
          port: 22,
          mac: null,
          probed_at: 0,
        }
      : ok('node2', s.ram ?? 128 * GB),
    [],
    0,
  )
  const target = { host: '127.0.0.1', user: 'u', port: 22 }
  const nodes = {
    targets: { node1: target, node2: target, node3: target },
    hardware: {
      snapshot: async () => {
        if (s.hardwareFails) throw new Error('probe crashed')
        return snapshot
      },
    },
    pool: {
      exec: async (_t: unknown, command: string) => {
        commands.push(command)
        if (s.remote instanceof Error) throw s.remote
        const parts = []
        if (s.remote?.config !== undefined) parts.push('@@config', JSON.stringify(s.remote.config))
        if (s.remote?.config !== undefined)
          parts.push('@@index', s.remote.index === undefined ? '' : JSON.stringify(s.remote.index))
        return { code: 0, signal: null, stdout: parts.join('\n') + '\n', stderr: '' }
      },
    },
  } as unknown as FitOptions['nodes']
  const catalog = {
    list: () => s.entries,
    get: (key: string) => {
      const e = s.entries.find((x) => x.def.key === key)
      if (!e) throw notFound(key)
      return e
    },
    onChange: () => undefined,
  }
  const fit = new FitEstimator({
    catalog,
    nodes,
    logger: createLogger({ sink: new MemorySink() }),
    nodeNames: () => ['node1', 'node2'],
    diskBytes: async (_key, node) => s.disk?.[node] ?? null,
    othersOn: (node) => s.others?.[node] ?? null,
  })
  return { fit, commands }
}

const llama = (knobs: Knobs = {}): CatalogEntry =>
  entry(
    {
      key: 'llama',
      repo: 'nvidia/Llama-3.3-70B-Instruct-FP8',
      mode: 'both',
      size_bytes: 75 * GB,
      engine_args: ['--max-model-len', '65536', '--kv-cache-dtype', 'fp8', '--gpu-memory-utilization', '0.8'],
    },
    knobs,
  )

describe('KV cache arithmetic', () => {
  it('dense GQA model: 2 × layers × KV heads × head dim × bytes × tokens', () => {
    const shape = kvShape(LLAMA_CONFIG)
    expect(shape).toEqual({ layers: 80, kvHeads: 8, headDim: 128, dtypeBytes: 2, maxPositions: 131072 })
    expect(kvCacheBytes(shape!, 65536, true)).toBe(10_737_418_240)
    expect(kvCacheBytes(shape!, 65536, false)).toBe(21_474_836_480)
  })

  it('hybrid models count only the layers that keep a KV cache', () => {
    const next = {
      num_hidden_layers: 48,
      num_attention_heads: 16,
      num_key_value_heads: 2,
      head_dim: 256,
      full_attention_interval: 4,
    }
    expect(kvCacheBytes(kvShape(next)!, 262144, false)).toBe(6_442_450_944)
    const nemotronH = {
      num_hidden_layers: 6,
      num_attention_heads: 32,
      num_key_value_heads: 2,
      head_dim: 128,
      hybrid_override_pattern: 'M-M*-*',
    }
    expect(kvShape(nemotronH)?.layers).toBe(2)
    const typed = {
      num_hidden_layers: 4,
      num_attention_heads: 8,
      head_dim: 64,
      layer_types: ['linear_attention', 'full_attention', 'mamba', 'sliding_attention'],
    }
    expect(kvShape(typed)).toMatchObject({ layers: 3, kvHeads: 8 })
  })

  it('latent attention (MLA) caches one latent of kv_lora_rank + rope dims per layer, not K and V per head', () => {
    // GLM-4.7-Flash's shape (as vLLM's own tests transcribe its config.json).
    const glm = {
      num_hidden_layers: 47,
      num_attention_heads: 20,
      num_key_value_heads: 20,
      hidden_size: 2048,
      kv_lora_rank: 512,
      qk_rope_head_dim: 64,
      qk_nope_head_dim: 192,
      v_head_dim: 256,
      max_position_embeddings: 202752,
    }
    const shape = kvShape(glm)
    expect(shape).toMatchObject({ layers: 47, kvHeads: 1, headDim: 576, latent: true })
    expect(kvCacheBytes(shape!, 202752, false)).toBe(47 * 576 * 2 * 202752)
    expect(kvCacheBytes(shape!, 202752, true)).toBe(47 * 576 * 202752)
  })

  it('a multimodal config reads its text_config; a config without heads gives nothing', () => {
    expect(kvShape({ text_config: { ...LLAMA_CONFIG, torch_dtype: 'float16' } })?.dtypeBytes).toBe(2)
    expect(kvShape({ model_type: 'sim' })).toBeNull()
  })
})

describe('FitEstimator', () => {
  it('solo: catalog size plus KV cache against RAM × gpu-memory-utilization', async () => {
    const { fit } = estimator({ entries: [llama()], remote: { config: LLAMA_CONFIG } })
    const e = await fit.estimate('llama', 'solo')
    expect(e.nodes).toEqual([
      {
        node: 'node1',
        weights_bytes: 75 * GB,
        kv_cache_bytes: 10_737_418_240,
        need_bytes: 85_737_418_240,
        budget_bytes: 102_400_000_000,
        ram_total_bytes: 128 * GB,
        other_bytes: null,
        verdict: 'fits',
      },
    ])
    expect(e.verdict).toBe('fits')
    expect(e.notes.join('\n')).toMatch(/approximate size from the catalog/)
  })

  it('memory other processes hold on a node counts: the reservation must fit beside it (vLLM checks free memory at start)', async () => {
    const { fit } = estimator({ entries: [llama()], remote: { config: LLAMA_CONFIG }, others: { node2: 30 * GB } })
    const alone = await fit.estimate('llama', undefined, ['node1'])
    expect(alone.verdict).toBe('fits')
    const beside = await fit.estimate('llama', undefined, ['node2'])
    expect(beside.nodes[0]).toMatchObject({ node: 'node2', other_bytes: 30 * GB, verdict: 'no_fit' })
    expect(beside.notes.join('\n')).toMatch(
      /node2: 30\.0 GB is held by other processes .*0\.8 × 128\.0 GB = 102\.4 GB cannot be reserved/,
    )
  })

  it("on chosen nodes: the head reads the config; tensor parallel must divide the attention heads (vLLM's words)", async () => {
    const { fit, commands } = estimator({ entries: [llama()], remote: { config: LLAMA_CONFIG } })
    const three = await fit.estimate('llama', undefined, ['node2', 'node1', 'node3'])
    expect(three.verdict).toBe('no_fit')
    expect(three.notes.join('\n')).toMatch(
      /Total number of attention heads \(64\) must be divisible by tensor parallel size \(3\)\./,
    )
    expect(await fit.headsCheck('llama', ['node1', 'node2'])).toBeNull()
    expect(commands.length).toBeGreaterThan(0)
  })

  it('tight below 10 % headroom, no_fit above the budget (the knob moves the budget)', async () => {
    expect(
      (
        await estimator({
          entries: [llama({ 'gpu-memory-utilization': 0.7 })],
          remote: { config: LLAMA_CONFIG },
        }).fit.estimate('llama', 'solo')
      ).verdict,
    ).toBe('tight')
    const no = await estimator({
      entries: [llama({ 'gpu-memory-utilization': 0.6 })],
      remote: { config: LLAMA_CONFIG },
    }).fit.estimate('llama', 'solo')
    expect(no.verdict).toBe('no_fit')
    expect(no.nodes[0]?.budget_bytes).toBe(76_800_000_000)
    // Without FP8 the KV cache doubles.
    const bf16 = await estimator({
      entries: [llama({ 'fp8-kv-cache': false })],
      remote: { config: LLAMA_CONFIG },
    }).fit.estimate('llama', 'solo')
    expect(bf16.nodes[0]?.kv_cache_bytes).toBe(21_474_836_480)
    expect(bf16.verdict).toBe('tight')
  })

  it('cluster: weights and KV cache split across both nodes', async () => {
    const e = await estimator({
      entries: [llama({ 'gpu-memory-utilization': 0.6 })],
      remote: { config: LLAMA_CONFIG },
    }).fit.estimate('llama', 'cluster')
    expect(e.nodes.map((n) => [n.node, n.weights_bytes, n.kv_cache_bytes, n.verdict])).toEqual([
      ['node1', 37_500_000_000, 5_368_709_120, 'fits'],
      ['node2', 37_500_000_000, 5_368_709_120, 'fits'],
    ])
    expect(e.verdict).toBe('fits')
  })

  it('a cluster-mode entry defaults to cluster; the size on disk wins over the catalog size', async () => {
    const big = entry({
      key: 'big',
      repo: 'acme/big',
      mode: 'cluster',
      size_bytes: 130 * GB,
      engine_args: ['--max-model-len', '1024'],
    })
    const e = await estimator({
      entries: [big],
      remote: { config: LLAMA_CONFIG },
      disk: { node2: 120 * GB },
    }).fit.estimate('big')
    expect(e.mode).toBe('cluster')
    expect(e.nodes[0]?.weights_bytes).toBe(60 * GB)
    expect(e.notes.join('\n')).toMatch(/size on disk/)
    expect(e.notes.join('\n')).toMatch(/engine default 0.9/)
  })

  it("no size anywhere else: the repo's safetensors index total", async () => {
    const m = entry({ key: 'm', repo: 'acme/m', engine_args: ['--max-model-len', '1024'] })
    const { fit, commands } = estimator({
      entries: [m],
      remote: { config: LLAMA_CONFIG, index: { metadata: { total_size: 12 * GB }, weight_map: {} } },
    })
    const e = await fit.estimate('m', 'solo')
    expect(e.nodes[0]?.weights_bytes).toBe(12 * GB)
    expect(e.notes.join('\n')).toMatch(/safetensors.index.json/)
    // The same hub path the downloads write to: HF_HOME when the node's shell has it.
    expect(commands[0]).toContain('"${HF_HOME:-$HOME/.cache/huggingface}/hub/models--acme--m"/snapshots/*')
  })

  it('nothing known: unknown, with notes saying what was missing', async () => {
    const m = entry({ key: 'm', repo: 'acme/m' })
    const e = await estimator({ entries: [m], remote: new Error('connection refused') }).fit.estimate('m')
    expect(e.verdict).toBe('unknown')
    expect(e.nodes[0]).toMatchObject({
      weights_bytes: null,
      kv_cache_bytes: null,
      need_bytes: null,
      verdict: 'unknown',
    })
    expect(e.notes.join('\n')).toMatch(/weights: unknown/)
    expect(e.notes.join('\n')).toMatch(/KV cache: unknown \(node1 could not be read: connection refused\)/)
  })

  it('weights alone beyond the budget are no_fit even when the KV cache is unknown', async () => {
    const m = entry({ key: 'm', repo: 'acme/m', size_bytes: 200 * GB })
    expect((await estimator({ entries: [m], remote: {} }).fit.estimate('m', 'solo')).verdict).toBe('no_fit')
  })

  it('an unreachable node2 makes a cluster estimate unknown for that node', async () => {
    const e = await estimator({
      entries: [llama()],
      remote: { config: LLAMA_CONFIG },
      node2: 'unreachable',
    }).fit.estimate('llama', 'cluster')
    expect(e.nodes.map((n) => n.verdict)).toEqual(['fits', 'unknown'])
    expect(e.verdict).toBe('unknown')
    expect(e.notes.join('\n')).toMatch(/node2: live RAM unknown \(unreachable\)/)
  })

  it('live RAM that cannot be read leaves the budget unknown, with a note; a solo run of a cluster model is noted', async () => {
    const big = entry({ key: 'big', repo: 'acme/big', mode: 'cluster', size_bytes: 10 * GB })
    const e = await estimator({ entries: [big], remote: { config: LLAMA_CONFIG }, hardwareFails: true }).fit.estimate(
      'big',
      'solo',
    )
    expect(e.nodes[0]).toMatchObject({ budget_bytes: null, ram_total_bytes: null, verdict: 'unknown' })
    expect(e.notes.join('\n')).toMatch(/live RAM could not be read: probe crashed/)
    expect(e.notes.join('\n')).toMatch(/cluster-only/)
  })

  it('a local model is read from its own directory, single-quoted', () => {
    const local = entry({ key: 'l', local_path: '/data/models/x' })
    expect(factsCommand(local)).toContain("for s in '/data/models/x'; do")
  })
})
