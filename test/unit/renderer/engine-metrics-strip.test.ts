// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import type { BackendApi } from '../../../src-renderer/api'
import type { EngineLoad, EngineLoadView } from '../../../src-main/contract/placements'
import EngineMetricsStrip from '../../../src-renderer/components/models/EngineMetricsStrip.vue'
import { mountWith, stubCanvas, unmountAll } from './mount'

const T = 1_764_633_600_000
const reading = (i: number) => ({
  at: T + i * 15_000,
  running: 2,
  waiting: 1,
  kv_cache_pct: 23.4,
  tokens_per_s: 40 + i,
  ttft_p50_s: 0.21,
})
const row = (over: Partial<EngineLoad> = {}): EngineLoad => ({
  ...reading(3),
  placement: 'node1',
  node: 'node1',
  model: 'qwen3-8b',
  state: 'ok',
  error: null,
  prefix_hit_pct: 61,
  history: [0, 1, 2, 3].map(reading),
  ...over,
})

function api(view: EngineLoadView, calls: string[]): BackendApi {
  return {
    transport: 'http',
    call: (async (method: string) => {
      calls.push(method)
      if (method !== 'listEngineLoad') throw new Error(`${method} not needed here`)
      return structuredClone(view)
    }) as BackendApi['call'],
    subscribe: () => () => undefined,
  } as unknown as BackendApi
}

afterEach(unmountAll)

describe('EngineMetricsStrip', () => {
  it('shows what the placement engine reports: running / waiting, KV cache, tokens/s, TTFT p50 and a chart', async () => {
    stubCanvas()
    const calls: string[] = []
    const el = await mountWith(EngineMetricsStrip, api({ interval_s: 15, placements: [row()] }, calls), {
      placementId: 'node1',
    })
    const text = (sel: string) => el.querySelector(`[data-test="${sel}"]`)?.textContent?.trim()
    expect(text('engine-requests')).toBe('2 / 1')
    expect(text('engine-kv')).toBe('23 %')
    expect(text('engine-tps')).toBe('43.0')
    expect(text('engine-ttft')).toBe('210 ms')
    expect(el.querySelector('figure[class="chart"], figure.chart')).not.toBeNull()
    expect(calls).toEqual(['listEngineLoad'])
  })

  it('says why when the engine’s metrics cannot be read, and shows nothing for another placement', async () => {
    const failing = row({ state: 'failing', error: 'its /metrics did not finish within 5 s', running: null })
    const el = await mountWith(EngineMetricsStrip, api({ interval_s: 15, placements: [failing] }, []), {
      placementId: 'node1',
    })
    expect(el.querySelector('[data-test="engine-error"]')?.textContent).toContain('did not finish within 5 s')
    unmountAll()
    const none = await mountWith(EngineMetricsStrip, api({ interval_s: 15, placements: [row()] }, []), {
      placementId: 'node3',
    })
    expect(none.querySelector('[data-test="engine-strip"]')).toBeNull()
  })
})
