import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parsePromText, renderFamily, type PromFamily, type PromSample } from '../../../src-main/lib/promText'

/**
 * The simulated engine's /metrics: vLLM's page as recorded (test/fixtures/engine-metrics/, the
 * families and buckets vLLM's source declares), its figures moved by the requests the fake serves:
 * requests waiting through prefill and running while they stream, the KV cache they hold, tokens,
 * TTFT, inter-token and end-to-end latencies, the prefix cache, finished requests by reason.
 */

const RECORDED = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'fixtures',
  'engine-metrics',
  'vllm-v1.prom',
)
/** Tokens the simulated KV cache holds (29127 blocks of 16 in the recording's cache_config_info, rounded). */
const KV_TOKENS = 466_000

interface Histogram {
  bounds: number[]
  counts: number[]
  sum: number
  count: number
}

/** One request the engine serves, from arrival to its last token. */
export interface EngineRequest {
  /** The first token is out: the request leaves the queue and runs. */
  firstToken(): void
  /** One more token generated. */
  token(): void
  end(reason: 'stop' | 'length' | 'abort'): void
}

export class SimEngineMetrics {
  private readonly recorded: PromFamily[]
  private readonly histograms = new Map<string, Histogram>()
  private readonly counters = new Map<string, number>()
  private readonly seenPrompts = new Set<string>()
  private running = 0
  private waiting = 0
  private heldTokens = 0
  private readonly createdAt: number

  constructor(private readonly now: () => number = Date.now) {
    this.recorded = parsePromText(fs.readFileSync(RECORDED, 'utf8'), { maxSamples: 100_000 })
    this.createdAt = now() / 1000
    for (const f of this.recorded) {
      if (f.type !== 'histogram') continue
      const bounds = f.samples
        .filter((s) => s.name.endsWith('_bucket'))
        .map((s) => Number(s.labels.find(([k]) => k === 'le')?.[1]))
        .filter((b) => Number.isFinite(b))
      this.histograms.set(f.name, { bounds, counts: bounds.map(() => 0), sum: 0, count: 0 })
    }
  }

  /** The engine restarted (a new container): every counter starts from zero. */
  reset(): void {
    for (const h of this.histograms.values()) {
      h.counts.fill(0)
      h.sum = 0
      h.count = 0
    }
    this.counters.clear()
    this.seenPrompts.clear()
    this.running = this.waiting = this.heldTokens = 0
  }

  begin(prompt: string, promptTokens: number, maxTokens: number | null): EngineRequest {
    const arrived = this.now()
    let first: number | null = null
    let last = arrived
    let generated = 0
    let done = false
    this.waiting++
    this.heldTokens += promptTokens
    this.add('vllm:prompt_tokens_total', promptTokens)
    this.add('vllm:prefix_cache_queries_total', promptTokens)
    if (this.seenPrompts.has(prompt)) this.add('vllm:prefix_cache_hits_total', promptTokens)
    if (this.seenPrompts.size < 10_000) this.seenPrompts.add(prompt)
    this.observe('vllm:request_prompt_tokens', promptTokens)
    this.observe('vllm:request_params_n', 1)
    if (maxTokens !== null) this.observe('vllm:request_params_max_tokens', maxTokens)
    return {
      firstToken: () => {
        if (first !== null || done) return
        first = last = this.now()
        this.waiting--
        this.running++
        this.observe('vllm:time_to_first_token_seconds', (first - arrived) / 1000)
      },
      token: () => {
        if (done) return
        const at = this.now()
        if (generated > 0) this.observe('vllm:inter_token_latency_seconds', (at - last) / 1000)
        last = at
        generated++
        this.heldTokens++
        this.add('vllm:generation_tokens_total', 1)
      },
      end: (reason) => {
        if (done) return
        done = true
        if (first === null) this.waiting--
        else this.running--
        this.heldTokens -= promptTokens + generated
        this.finished(reason, arrived, first, generated)
      },
    }
  }

  private finished(reason: string, arrived: number, first: number | null, generated: number): void {
    const at = this.now()
    const ran = first ?? at
    this.add(`vllm:request_success_total ${reason}`, 1)
    this.observe('vllm:e2e_request_latency_seconds', (at - arrived) / 1000)
    this.observe('vllm:request_queue_time_seconds', (ran - arrived) / 1000)
    this.observe('vllm:request_prefill_time_seconds', (ran - arrived) / 1000)
    this.observe('vllm:request_inference_time_seconds', (at - ran) / 1000)
    this.observe('vllm:request_decode_time_seconds', (at - ran) / 1000)
    this.observe('vllm:request_generation_tokens', generated)
    this.observe('vllm:request_max_num_generation_tokens', generated)
    if (generated > 1) this.observe('vllm:request_time_per_output_token_seconds', (at - ran) / 1000 / (generated - 1))
  }

  /** The page, as vLLM serves it, for the model the engine serves now. */
  render(model: string): string {
    return this.recorded.map((f) => renderFamily({ ...f, samples: this.samplesOf(f, model) })).join('')
  }

  private samplesOf(f: PromFamily, model: string): PromSample[] {
    const relabel = (s: PromSample, value = s.value): PromSample => ({
      name: s.name,
      labels: s.labels.map(([k, v]): [string, string] => [k, k === 'model_name' ? model : v]),
      value,
    })
    const h = this.histograms.get(f.name)
    if (h !== undefined) return this.histogramSamples(f, h, relabel)
    if (f.name.endsWith('_created')) return f.samples.map((s) => relabel(s, this.createdAt))
    return f.samples.map((s) => relabel(s, this.valueOf(f.name, s) ?? s.value))
  }

  private valueOf(family: string, s: PromSample): number | null {
    switch (family) {
      case 'vllm:num_requests_running':
        return this.running
      case 'vllm:num_requests_waiting':
        return this.waiting
      case 'vllm:kv_cache_usage_perc':
        return Math.min(1, this.heldTokens / KV_TOKENS)
      case 'vllm:request_success_total':
        return this.counters.get(`${family} ${s.labels.find(([k]) => k === 'finished_reason')?.[1]}`) ?? 0
      default:
        return family.startsWith('vllm:') && family.endsWith('_total') ? (this.counters.get(family) ?? 0) : null
    }
  }

  private histogramSamples(f: PromFamily, h: Histogram, relabel: (s: PromSample, v?: number) => PromSample) {
    let bucket = 0
    let cumulative = 0
    return f.samples.map((s) => {
      if (s.name.endsWith('_sum')) return relabel(s, h.sum)
      if (s.name.endsWith('_count')) return relabel(s, h.count)
      const le = s.labels.find(([k]) => k === 'le')?.[1]
      if (le === '+Inf') return relabel(s, h.count)
      cumulative += h.counts[bucket++] ?? 0
      return relabel(s, cumulative)
    })
  }

  private add(name: string, n: number): void {
    this.counters.set(name, (this.counters.get(name) ?? 0) + n)
  }

  private observe(name: string, value: number): void {
    const h = this.histograms.get(name)
    if (h === undefined) return
    const i = h.bounds.findIndex((b) => value <= b)
    if (i !== -1) h.counts[i]!++
    h.sum += value
    h.count++
  }
}
