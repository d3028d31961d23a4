import type { PromFamily } from '../lib/promText'

/**
 * What an engine's own page says about its load (vLLM's families: test/fixtures/engine-metrics/
 * README.md names the source). Names that changed between vLLM versions are read under both.
 */

/** The families kept in /metrics unless ENGINE_METRICS_FAMILIES=all (docs/observability.md). */
export const KEPT_FAMILIES: readonly string[] = [
  'vllm:num_requests_running',
  'vllm:num_requests_waiting',
  // KV-cache usage: kv_cache_usage_perc since vLLM 0.10/0.11, gpu_cache_usage_perc before (deprecated).
  'vllm:kv_cache_usage_perc',
  'vllm:gpu_cache_usage_perc',
  'vllm:prompt_tokens_total',
  'vllm:generation_tokens_total',
  'vllm:time_to_first_token_seconds',
  // Inter-token latency: inter_token_latency_seconds now, time_per_output_token_seconds before.
  'vllm:inter_token_latency_seconds',
  'vllm:time_per_output_token_seconds',
  'vllm:e2e_request_latency_seconds',
  'vllm:request_queue_time_seconds',
  // Prefix cache: prefix_cache_{queries,hits} now, gpu_prefix_cache_{queries,hits} before.
  'vllm:prefix_cache_queries_total',
  'vllm:prefix_cache_hits_total',
  'vllm:gpu_prefix_cache_queries_total',
  'vllm:gpu_prefix_cache_hits_total',
  'vllm:num_preemptions_total',
]

/** The figures read from one page, summed over the engine's data-parallel ranks (`engine` label). */
export interface PageFigures {
  readonly running: number | null
  readonly waiting: number | null
  /** 0 to 1. */
  readonly kvCache: number | null
  readonly generationTokens: number | null
  readonly prefixQueries: number | null
  readonly prefixHits: number | null
  /** TTFT histogram: cumulative counts by bound (+Inf last), summed over ranks. */
  readonly ttft: readonly (readonly [number, number])[] | null
}

function byName(families: readonly PromFamily[]): Map<string, PromFamily> {
  return new Map(families.map((f) => [f.name, f]))
}

function total(f: PromFamily | undefined, sampleName = f?.name): number | null {
  if (f === undefined) return null
  let sum = 0
  let any = false
  for (const s of f.samples) {
    if (s.name !== sampleName || !Number.isFinite(s.value)) continue
    sum += s.value
    any = true
  }
  return any ? sum : null
}

function mean(f: PromFamily | undefined): number | null {
  if (f === undefined) return null
  const values = f.samples.filter((s) => Number.isFinite(s.value)).map((s) => s.value)
  return values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length
}

function buckets(f: PromFamily | undefined): [number, number][] | null {
  if (f === undefined || f.type !== 'histogram') return null
  const byBound = new Map<number, number>()
  for (const s of f.samples) {
    if (s.name !== `${f.name}_bucket`) continue
    const le = s.labels.find(([k]) => k === 'le')?.[1]
    const bound = le === '+Inf' ? Infinity : Number(le)
    if (le === undefined || Number.isNaN(bound)) continue
    byBound.set(bound, (byBound.get(bound) ?? 0) + s.value)
  }
  return byBound.size === 0 ? null : [...byBound.entries()].sort((a, b) => a[0] - b[0])
}

export function pageFigures(families: readonly PromFamily[]): PageFigures {
  const f = byName(families)
  const first = (...names: string[]): PromFamily | undefined => names.map((n) => f.get(n)).find((x) => x !== undefined)
  return {
    running: total(f.get('vllm:num_requests_running')),
    waiting: total(f.get('vllm:num_requests_waiting')),
    kvCache: mean(first('vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc')),
    generationTokens: total(f.get('vllm:generation_tokens_total')),
    prefixQueries: total(first('vllm:prefix_cache_queries_total', 'vllm:gpu_prefix_cache_queries_total')),
    prefixHits: total(first('vllm:prefix_cache_hits_total', 'vllm:gpu_prefix_cache_hits_total')),
    ttft: buckets(f.get('vllm:time_to_first_token_seconds')),
  }
}

/** Growth of a counter between two scrapes; a counter that went down restarted from zero (Prometheus's rule). */
export function counterGrowth(before: number | null, now: number | null): number | null {
  if (before === null || now === null) return null
  return now >= before ? now - before : now
}

/**
 * The median of the observations between two readings of a histogram, interpolated within its
 * bucket as PromQL's histogram_quantile does; null when none were made. Counts that went down
 * mean the engine restarted: the later reading alone is the window.
 */
export function windowMedian(
  before: readonly (readonly [number, number])[] | null,
  now: readonly (readonly [number, number])[] | null,
): number | null {
  if (now === null) return null
  const prior = new Map(before ?? [])
  const reset = now.some(([b, c]) => c < (prior.get(b) ?? 0))
  const window = now.map(([b, c]): [number, number] => [b, reset ? c : c - (prior.get(b) ?? 0)])
  const count = window[window.length - 1]?.[1] ?? 0
  if (count <= 0) return null
  const rank = count / 2
  let lowerBound = 0
  let lowerCount = 0
  for (const [bound, cumulative] of window) {
    if (cumulative >= rank) {
      // Above the last finite bound nothing is known but the bound.
      if (bound === Infinity) return lowerBound
      const inBucket = cumulative - lowerCount
      return inBucket <= 0 ? bound : lowerBound + ((bound - lowerBound) * (rank - lowerCount)) / inBucket
    }
    lowerBound = bound
    lowerCount = cumulative
  }
  return null
}
