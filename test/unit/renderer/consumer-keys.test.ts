// @vitest-environment happy-dom
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { BackendApi } from '../../../src-renderer/api'
import { button, flush, mountWith, unmountAll } from './mount'
import ConsumerKeys from '../../../src-renderer/components/gateway/ConsumerKeys.vue'
import KeyUsage from '../../../src-renderer/components/gateway/KeyUsage.vue'
import GatewayRequestLog from '../../../src-renderer/components/gateway/GatewayRequestLog.vue'

const plots: { data: unknown[][] }[] = []
vi.mock('uplot', () => ({
  default: class {
    static paths = { bars: () => () => null }
    data: unknown[][]
    constructor(_opts: unknown, data: unknown[][]) {
      this.data = data
      plots.push(this)
    }
    setData(d: unknown[][]): void {
      this.data = d
    }
    setSize(): void {}
    destroy(): void {}
  },
}))

const HOUR = Date.UTC(2026, 10, 23, 7)
const key = (over: Record<string, unknown>) => ({
  id: '0123456789abcdef',
  name: 'chat ui',
  prefix: 'tdm_1a2b3c4d',
  created_at: HOUR,
  expires_at: null,
  disabled: false,
  models: null,
  requests_per_minute: 60,
  max_concurrent: 2,
  last_used_at: null,
  in_flight: 0,
  ...over,
})
const usageRow = (over: Record<string, unknown>) => ({
  key_id: '0123456789abcdef',
  hour: HOUR,
  requests: 10,
  errors: 1,
  prompt_tokens: 100,
  completion_tokens: 500,
  estimated_completion_tokens: 50,
  streams: 4,
  ttft_ms_sum: 800,
  stream_tokens: 400,
  stream_seconds: 10,
  audio_seconds: 0,
  speech_characters: 0,
  ...over,
})

function fakeApi(calls: { method: string; input: unknown }[], answers: Record<string, unknown>): BackendApi {
  return {
    transport: 'http',
    call: (async (method: string, input: unknown) => {
      calls.push({ method, input })
      return answers[method]
    }) as BackendApi['call'],
    subscribe: (() => () => undefined) as BackendApi['subscribe'],
  }
}

afterEach(unmountAll)

describe('Consumer keys', () => {
  it('says legacy keys are accepted, lists keys with limits, and shows a new secret once', async () => {
    const calls: { method: string; input: unknown }[] = []
    const answers: Record<string, unknown> = {
      consumerKeysList: {
        keys: [key({ disabled: true, models: ['m1'] })],
        total: 1,
        legacy_keys: 2,
        key_required: true,
      },
      consumerKeyCreate: { ...key({ name: 'batch' }), secret: 'tdm_1a2b3c4d_' + 'x'.repeat(43) },
    }
    const el = await mountWith(ConsumerKeys, fakeApi(calls, answers))
    const text = el.textContent ?? ''
    expect(text).toContain('2 unnamed legacy keys')
    expect(text).toContain('60/min, 2 at once')
    expect(text).toContain('disabled')
    expect(text).toContain('m1')
    const name = el.querySelector('input') as HTMLInputElement
    name.value = 'batch'
    name.dispatchEvent(new Event('input'))
    const rpm = el.querySelectorAll('input')[3] as HTMLInputElement
    rpm.value = '30'
    rpm.dispatchEvent(new Event('input'))
    await flush()
    el.querySelector('form')!.dispatchEvent(new Event('submit'))
    await flush()
    expect(calls.find((c) => c.method === 'consumerKeyCreate')!.input).toEqual({
      name: 'batch',
      expires_at: null,
      models: null,
      requests_per_minute: 30,
      max_concurrent: null,
    })
    expect(el.querySelector('.ck-secret')!.textContent).toContain('tdm_1a2b3c4d_xxx')
    const enable = button(el, 'Enable')
    enable.click()
    await flush()
    expect(calls.find((c) => c.method === 'consumerKeyUpdate')!.input).toEqual({
      id: '0123456789abcdef',
      disabled: false,
    })
  })

  it('pages the keys when there are more than a page (each sold license has one)', async () => {
    const calls: { method: string; input: unknown }[] = []
    const keys = Array.from({ length: 100 }, (_, i) => key({ id: i.toString(16).padStart(16, '0'), name: `k${i}` }))
    const answers = { consumerKeysList: { keys, total: 250, legacy_keys: 0, key_required: true } }
    const el = await mountWith(ConsumerKeys, fakeApi(calls, answers))
    expect(calls[0]).toEqual({ method: 'consumerKeysList', input: { limit: 100, offset: 0 } })
    expect(el.querySelector('.pager')!.textContent).toContain('1–100 of 250')
    button(el, 'Next').click()
    await flush()
    expect(calls.at(-1)).toEqual({ method: 'consumerKeysList', input: { limit: 100, offset: 100 } })
  })
})

describe('Usage per key', () => {
  it('shows totals with estimates apart, mean TTFT, tokens/s, and a chart per key', async () => {
    const answers: Record<string, unknown> = {
      consumerKeyUsage: {
        from: HOUR - 23 * 3600_000,
        hours: [usageRow({})],
        totals: [usageRow({})],
        names: { '0123456789abcdef': 'chat ui' },
      },
    }
    const el = await mountWith(KeyUsage, fakeApi([], answers))
    const row = el.querySelector('.ku-table tbody tr')!.textContent ?? ''
    expect(row).toContain('chat ui')
    expect(row).toContain('450')
    expect(row).toContain('~50 estimated')
    expect(row).toContain('200 ms')
    expect(row).toContain('40.0')
    const chart = plots.at(-1)!.data
    expect(chart[0]).toHaveLength(24)
    expect((chart[1] as number[]).at(-1)).toBe(10)
  })
})

describe('Request log', () => {
  it('shows the key name, TTFT and tokens per second on every row, estimates marked', async () => {
    const base = {
      method: 'POST',
      path: '/v1/chat/completions',
      status: 200,
      latency_ms: 900,
      ttfb_ms: 3,
      bytes: 10,
      streamed: true,
      aborted: false,
      prompt_tokens: 4,
      completion_tokens: 20,
    }
    const answers: Record<string, unknown> = {
      gatewayRequests: {
        requests: [
          { ...base, seq: 2, at: HOUR, key: 'chat ui', ttft_ms: 123.4, tokens_per_s: 41.25, tokens_estimated: true },
          { ...base, seq: 1, at: HOUR, key: '(legacy)', ttft_ms: null, tokens_per_s: null, tokens_estimated: false },
        ],
        histogram: { bounds_ms: [10], counts: [0, 2] },
        total: 2,
      },
    }
    const el = await mountWith(GatewayRequestLog, fakeApi([], answers))
    const rows = [...el.querySelectorAll('.gw-log tbody tr')].map((r) => r.textContent ?? '')
    expect(rows[0]).toContain('chat ui')
    expect(rows[0]).toContain('123 ms')
    expect(rows[0]).toContain('~41.3')
    expect(rows[1]).toContain('(legacy)')
  })
})
