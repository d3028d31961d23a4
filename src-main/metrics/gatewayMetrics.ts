import { Counter, Gauge, type Registry } from 'prom-client'
import { GatheredHistogram, PendingCounts, gatheredCounter } from './gathered'
import type { RequestObserver } from '../gateway/relay/requestLog'

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
  const latency = new GatheredHistogram({
    name: 'tandem_gateway_request_duration_seconds',
    help: 'Gateway request duration, start to end of response',
    labelNames: ['route'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers,
  })
  const ttft = new GatheredHistogram({
    name: 'tandem_gateway_ttft_seconds',
    help: 'Time to first token of streamed answers',
    labelNames: ['route', 'key'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
    registers,
  })
  const rate = new GatheredHistogram({
    name: 'tandem_gateway_stream_tokens_per_second',
    help: 'Generation speed of streamed answers (completion tokens per second)',
    labelNames: ['route', 'key'] as const,
    buckets: [1, 5, 10, 20, 30, 50, 75, 100, 150, 250],
    registers,
  })
  const promptTokens = new PendingCounts(['key'] as const)
  gatheredCounter(
    {
      name: 'tandem_gateway_prompt_tokens_total',
      help: 'Prompt tokens the upstream reported',
      registers,
    },
    promptTokens,
  )
  const completionTokens = new PendingCounts(['key', 'estimated'] as const)
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
    help: 'Seconds of audio transcribed',
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
    requestCounts.add(1, route, String(entry.status), key)
    latency.record(entry.latency_ms / 1000, route)
    if (!usage) return
    if (usage.ttft_ms !== null) ttft.record(usage.ttft_ms / 1000, route, key)
    if (usage.tokens_per_s !== null) rate.record(usage.tokens_per_s, route, key)
    if (usage.prompt_tokens) promptTokens.add(usage.prompt_tokens, key)
    if (usage.completion_tokens)
      completionTokens.add(usage.completion_tokens, key, usage.tokens_estimated ? 'true' : 'false')
    if (usage.audio_seconds > 0) audio.inc({ key }, usage.audio_seconds)
    if (usage.speech_characters > 0) chars.inc({ key }, usage.speech_characters)
  }
}
