import { Counter, Gauge, type Registry } from 'prom-client'
import { GatheredHistogram, PendingCounts, gatheredCounter } from './gathered'
import type { RequestObserver } from '../gateway/types'

/** The `placement` label of a request no placement served (speech, the embeddings service, refusals). */
const NO_PLACEMENT = 'none'
/** Placement ids past this many distinct ones are counted as `other`: a label's series stay bounded. */
export const PLACEMENT_LABELS_MAX = 32

/** Gateway metrics, fed by every finished request-log entry; open streams are read at scrape time. */
export function gatewayMetrics(registers: Registry[], openStreams: () => number): RequestObserver {
  const requestCounts = new PendingCounts(['route', 'status', 'key'] as const)
  gatheredCounter(
    {
      name: 'tandem_gateway_requests_total',
      help: 'Gateway requests by route, HTTP status and consumer key',
      registers,
    },
    requestCounts,
  )
  const placementCounts = new PendingCounts(['placement', 'route', 'status'] as const)
  gatheredCounter(
    {
      name: 'tandem_gateway_placement_requests_total',
      help: 'Gateway requests a placement served, by placement, route and HTTP status',
      registers,
    },
    placementCounts,
  )
  const placementLabel = boundedLabels(PLACEMENT_LABELS_MAX)
  const latency = new GatheredHistogram({
    name: 'tandem_gateway_request_duration_seconds',
    help: 'Gateway request duration, start to end of response',
    labelNames: ['route', 'placement'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers,
  })
  const ttft = new GatheredHistogram({
    name: 'tandem_gateway_ttft_seconds',
    help: 'Time to first token of streamed answers',
    labelNames: ['route', 'key', 'placement'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
    registers,
  })
  const rate = new GatheredHistogram({
    name: 'tandem_gateway_stream_tokens_per_second',
    help: 'Generation speed of streamed answers (completion tokens per second)',
    labelNames: ['route', 'key', 'placement'] as const,
    buckets: [1, 5, 10, 20, 30, 50, 75, 100, 150, 250],
    registers,
  })
  const promptTokens = new PendingCounts(['key', 'placement'] as const)
  gatheredCounter(
    {
      name: 'tandem_gateway_prompt_tokens_total',
      help: 'Prompt tokens the upstream reported',
      registers,
    },
    promptTokens,
  )
  const completionTokens = new PendingCounts(['key', 'estimated', 'placement'] as const)
  gatheredCounter(
    {
      name: 'tandem_gateway_completion_tokens_total',
      help: 'Completion tokens; estimated="true" were counted from stream chunks (no usage from the upstream)',
      registers,
    },
    completionTokens,
  )
  const audio = new Counter({
    name: 'tandem_gateway_audio_seconds_total',
    help: 'Seconds of audio transcribed or synthesized',
    labelNames: ['key'],
    registers,
  })
  const chars = new Counter({
    name: 'tandem_gateway_speech_characters_total',
    help: 'Characters synthesized to speech',
    labelNames: ['key'],
    registers,
  })
  new Gauge({
    name: 'tandem_gateway_streams_open',
    help: 'Streamed answers being sent now',
    registers,
    collect() {
      this.set(openStreams())
    },
  })

  return (entry, usage) => {
    const key = entry.key ?? 'none'
    const route = entry.path
    const status = String(entry.status)
    const placement = entry.placement === null ? NO_PLACEMENT : placementLabel(entry.placement)
    requestCounts.add(1, route, status, key)
    if (entry.placement !== null) placementCounts.add(1, placement, route, status)
    latency.record(entry.latency_ms / 1000, route, placement)
    if (!usage) return
    if (usage.ttft_ms !== null) ttft.record(usage.ttft_ms / 1000, route, key, placement)
    if (usage.tokens_per_s !== null) rate.record(usage.tokens_per_s, route, key, placement)
    if (usage.prompt_tokens) promptTokens.add(usage.prompt_tokens, key, placement)
    if (usage.completion_tokens)
      completionTokens.add(usage.completion_tokens, key, usage.tokens_estimated ? 'true' : 'false', placement)
    if (usage.audio_seconds > 0) audio.inc({ key }, usage.audio_seconds)
    if (usage.speech_characters > 0) chars.inc({ key }, usage.speech_characters)
  }
}

/**
 * A label's values as given, up to `max` distinct ones; later new ones become `other`. Placement ids
 * are node sets, few in practice, but a label must not grow with every layout ever placed.
 */
function boundedLabels(max: number): (value: string) => string {
  const seen = new Set<string>()
  return (value) => {
    if (seen.has(value)) return value
    if (seen.size >= max) return 'other'
    seen.add(value)
    return value
  }
}
