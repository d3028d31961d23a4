import { Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { PLACEMENT_LABELS_MAX, gatewayMetrics } from '../../../src-main/metrics/gatewayMetrics'
import type { RequestEntry } from '../../../src-main/gateway/relay/requestLog'

function entry(placement: string | null): RequestEntry {
  return {
    seq: 1,
    at: 0,
    method: 'POST',
    path: '/v1/chat/completions',
    status: 200,
    latency_ms: 12,
    ttfb_ms: 3,
    bytes: 100,
    streamed: false,
    aborted: false,
    playground: false,
    key: null,
    ttft_ms: null,
    tokens_per_s: null,
    prompt_tokens: 4,
    completion_tokens: 9,
    tokens_estimated: false,
    placement,
  }
}

const usage = {
  ttft_ms: 50,
  tokens_per_s: 30,
  prompt_tokens: 4,
  completion_tokens: 9,
  tokens_estimated: false,
  generation_s: 0.3,
  audio_seconds: 0,
  speech_characters: 0,
  model: null,
}

describe('gateway metrics by placement', () => {
  it('labels tokens and time to first token with the placement, and speech-like requests with none', async () => {
    const registry = new Registry()
    const observe = gatewayMetrics([registry], () => 0)
    observe(entry('node1'), usage, undefined)
    observe(entry('node3+node4'), usage, undefined)
    observe(entry(null), null, undefined)
    const text = await registry.metrics()
    expect(text).toContain('tandem_gateway_prompt_tokens_total{key="none",placement="node3+node4"} 4')
    expect(text).toContain('tandem_gateway_completion_tokens_total{key="none",estimated="false",placement="node1"} 9')
    expect(text).toMatch(
      /tandem_gateway_ttft_seconds_count\{route="\/v1\/chat\/completions",key="none",placement="node1"\} 1/,
    )
    expect(text).toMatch(
      /tandem_gateway_request_duration_seconds_count\{route="\/v1\/chat\/completions",placement="none"\} 1/,
    )
    expect(text).not.toMatch(/tandem_gateway_placement_requests_total\{placement="none"/)
  })

  it('keeps the placement label bounded: ids past the limit are counted as other', async () => {
    const registry = new Registry()
    const observe = gatewayMetrics([registry], () => 0)
    for (let i = 0; i < PLACEMENT_LABELS_MAX + 20; i++) observe(entry(`node${i}`), null, undefined)
    const text = await registry.metrics()
    const series = text.split('\n').filter((l) => l.startsWith('tandem_gateway_placement_requests_total{'))
    expect(series).toHaveLength(PLACEMENT_LABELS_MAX + 1)
    expect(series).toContain(
      'tandem_gateway_placement_requests_total{placement="other",route="/v1/chat/completions",status="200"} 20',
    )
  })
})
