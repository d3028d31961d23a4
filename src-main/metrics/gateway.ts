import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import type { RequestObserver } from '../gateway/requestLog'

/** Gateway metrics, fed by every finished request-log entry; open streams are read at scrape time. */
export function gatewayMetrics(registers: Registry[], openStreams: () => number): RequestObserver {
  const requests = new Counter({
    name: 'tandem_gateway_requests_total',
    help: 'Gateway requests by route, HTTP status and consumer key',
    labelNames: ['route', 'status', 'key'],
    registers,
  })
  const latency = new Histogram({
    name: 'tandem_gateway_request_duration_seconds',
    help: 'Gateway request duration, start to end of response',
    labelNames: ['route'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers,
  })
  const ttft = new Histogram({
    name: 'tandem_gateway_ttft_seconds',
    help: 'Time to first token of streamed answers',
    labelNames: ['route', 'key'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
    registers,
  })
  const rate = new Histogram({
    name: 'tandem_gateway_stream_tokens_per_second',
    help: 'Generation speed of streamed answers (completion tokens per second)',
    labelNames: ['route', 'key'],
    buckets: [1, 5, 10, 20, 30, 50, 75, 100, 150, 250],
    registers,
  })
  const tokensIn = new Counter({
    name: 'tandem_gateway_prompt_tokens_total',
    help: 'Prompt tokens the upstream reported',
    labelNames: ['key'],
    registers,
  })
  const tokensOut = new Counter({
    name: 'tandem_gateway_completion_tokens_total',
    help: 'Completion tokens; estimated="true" were counted from stream chunks (no usage from the upstream)',
    labelNames: ['key', 'estimated'],
    registers,
  })
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
    requests.inc({ route, status: String(entry.status), key })
    latency.observe({ route }, entry.latency_ms / 1000)
    if (!usage) return
    if (usage.ttft_ms !== null) ttft.observe({ route, key }, usage.ttft_ms / 1000)
    if (usage.tokens_per_s !== null) rate.observe({ route, key }, usage.tokens_per_s)
    if (usage.prompt_tokens) tokensIn.inc({ key }, usage.prompt_tokens)
    if (usage.completion_tokens)
      tokensOut.inc({ key, estimated: String(usage.tokens_estimated) }, usage.completion_tokens)
    if (usage.audio_seconds > 0) audio.inc({ key }, usage.audio_seconds)
    if (usage.speech_characters > 0) chars.inc({ key }, usage.speech_characters)
  }
}
