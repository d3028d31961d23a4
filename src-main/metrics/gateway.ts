import { Counter, Gauge, type Registry } from 'prom-client'
import { GatheredHistogram, PendingCounts, gatheredCounter } from './gathered'
import type { RequestObserver } from '../gateway/requestLog'

/** Gateway metrics, fed by every finished request-log entry; open streams are read at scrape time. */
export function gatewayMetrics(registers: Registry[], openStreams: () => number): RequestObserver {
  const requestCounts = new PendingCounts<'route' | 'status' | 'key'>()
  gatheredCounter(
    {
      name: 'tandem_gateway_requests_total',
      help: 'Gateway requests by route, HTTP status and consumer key',
      labelNames: ['route', 'status', 'key'],
      registers,
    },
    requestCounts,
  )
  const latency = new GatheredHistogram<'route'>({
    name: 'tandem_gateway_request_duration_seconds',
    help: 'Gateway request duration, start to end of response',
    labelNames: ['route'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers,
  })
  const ttft = new GatheredHistogram<'route' | 'key'>({
    name: 'tandem_gateway_ttft_seconds',
    help: 'Time to first token of streamed answers',
    labelNames: ['route', 'key'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
    registers,
  })
  const rate = new GatheredHistogram<'route' | 'key'>({
    name: 'tandem_gateway_stream_tokens_per_second',
    help: 'Generation speed of streamed answers (completion tokens per second)',
    labelNames: ['route', 'key'],
    buckets: [1, 5, 10, 20, 30, 50, 75, 100, 150, 250],
    registers,
  })
  const promptTokens = new PendingCounts<'key'>()
  gatheredCounter(
    {
      name: 'tandem_gateway_prompt_tokens_total',
      help: 'Prompt tokens the upstream reported',
      labelNames: ['key'],
      registers,
    },
    promptTokens,
  )
  const completionTokens = new PendingCounts<'key' | 'estimated'>()
  gatheredCounter(
    {
      name: 'tandem_gateway_completion_tokens_total',
      help: 'Completion tokens; estimated="true" were counted from stream chunks (no usage from the upstream)',
      labelNames: ['key', 'estimated'],
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
    const status = entry.status
    requestCounts.add(`${route}\u0000${status}\u0000${key}`, () => ({ route, status: String(status), key }), 1)
    latency.record(route, () => ({ route }), entry.latency_ms / 1000)
    if (!usage) return
    const routeAndKey = `${route}\u0000${key}`
    if (usage.ttft_ms !== null) ttft.record(routeAndKey, () => ({ route, key }), usage.ttft_ms / 1000)
    if (usage.tokens_per_s !== null) rate.record(routeAndKey, () => ({ route, key }), usage.tokens_per_s)
    if (usage.prompt_tokens) promptTokens.add(key, () => ({ key }), usage.prompt_tokens)
    if (usage.completion_tokens) {
      const estimated = usage.tokens_estimated
      completionTokens.add(
        `${key}\u0000${estimated}`,
        () => ({ key, estimated: String(estimated) }),
        usage.completion_tokens,
      )
    }
    if (usage.audio_seconds > 0) audio.inc({ key }, usage.audio_seconds)
    if (usage.speech_characters > 0) chars.inc({ key }, usage.speech_characters)
  }
}
