import { describe, expect, it } from 'vitest'
import { Histogram, Registry } from 'prom-client'
import { GatheredHistogram, PendingCounts, gatheredCounter } from '../../../src-main/metrics/gathered'

const buckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 10]

/** Seeded values around, on and beyond the bounds. */
function observations(n: number): { route: string; key: string; value: number }[] {
  let seed = 7
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
  const routes = ['/v1/chat/completions', '/v1/completions', '/v1/embeddings']
  const keys = ['none', 'grafana test', 'a"quoted\\key']
  const out = []
  for (let i = 0; i < n; i++) {
    const pick = next()
    const value =
      pick < 0.2 ? buckets[Math.floor(next() * buckets.length)]! : pick < 0.3 ? 10 + next() * 100 : next() * 2
    out.push({ route: routes[i % routes.length]!, key: keys[Math.floor(next() * keys.length)]!, value })
  }
  return out
}

function pair(): {
  theirs: Histogram<'route' | 'key'>
  ours: GatheredHistogram<'route' | 'key'>
  a: Registry
  b: Registry
} {
  const a = new Registry()
  const b = new Registry()
  const config = { name: 'tandem_x_seconds', help: 'x', labelNames: ['route', 'key'] as const, buckets }
  return {
    theirs: new Histogram({ ...config, registers: [a] }),
    ours: new GatheredHistogram({ ...config, registers: [b] }),
    a,
    b,
  }
}

describe('GatheredHistogram', () => {
  it("renders the text and the JSON prom-client's Histogram renders for the same observations", async () => {
    const { theirs, ours, a, b } = pair()
    for (const { route, key, value } of observations(5000)) {
      theirs.observe({ route, key }, value)
      ours.record(value, route, key)
    }
    const text = await b.metrics()
    expect(text).toContain('tandem_x_seconds_bucket{le="0.005",route="/v1/chat/completions"')
    expect(text).toBe(await a.metrics())
    // Exemplars are off: prom-client's JSON carries them as null, the gathered histogram leaves them out.
    const withoutExemplars = (json: Awaited<ReturnType<Registry['getMetricsAsJSON']>>) =>
      json.map((m) => ({
        ...m,
        values: m.values.map((v) => ({
          labels: v.labels,
          value: v.value,
          metricName: 'metricName' in v ? v.metricName : null,
        })),
      }))
    expect(withoutExemplars(await b.getMetricsAsJSON())).toEqual(withoutExemplars(await a.getMetricsAsJSON()))
  })

  it('keeps one series per label set and skips values that are not finite', async () => {
    const { ours, b } = pair()
    for (const value of [0.001, 0.5, Number.NaN, Infinity, 3]) ours.record(value, '/v1/completions', 'none')
    ours.record(0.5, '/v1/completions', 'other')
    const lines = (await b.metrics()).split('\n')
    expect(lines).toEqual(
      expect.arrayContaining([
        'tandem_x_seconds_count{route="/v1/completions",key="none"} 3',
        'tandem_x_seconds_sum{route="/v1/completions",key="none"} 3.501',
        'tandem_x_seconds_bucket{le="0.25",route="/v1/completions",key="none"} 1',
        'tandem_x_seconds_bucket{le="1",route="/v1/completions",key="none"} 2',
        'tandem_x_seconds_count{route="/v1/completions",key="other"} 1',
      ]),
    )
  })

  it('is fed only through record, and reset empties it', async () => {
    const { ours, b } = pair()
    expect(() => ours.observe({ route: 'r', key: 'k' }, 1)).toThrow(/record\(\)/)
    ours.record(1, 'r', 'k')
    ours.reset()
    expect(await b.metrics()).not.toContain('_count')
    ours.record(2, 'r', 'k')
    expect(await b.metrics()).toContain('tandem_x_seconds_sum{route="r",key="k"} 2')
  })
})

describe('PendingCounts', () => {
  it('hands a scrape the increments since the last one, per label set', async () => {
    const registry = new Registry()
    const pending = new PendingCounts(['route', 'status'] as const)
    gatheredCounter({ name: 'tandem_x_total', help: 'x', registers: [registry] }, pending)
    pending.add(1, '/v1/completions', '200')
    pending.add(2, '/v1/completions', '200')
    pending.add(1, '/v1/completions', '503')
    // Values that a key joined with a separator would run together stay apart.
    pending.add(5, 'a', 'b c')
    pending.add(7, 'a b', 'c')
    const first = await registry.metrics()
    const totals = first.split('\n').filter((line) => line.startsWith('tandem_x_total{'))
    expect(totals.sort()).toEqual([
      'tandem_x_total{route="/v1/completions",status="200"} 3',
      'tandem_x_total{route="/v1/completions",status="503"} 1',
      'tandem_x_total{route="a b",status="c"} 7',
      'tandem_x_total{route="a",status="b c"} 5',
    ])
    // A scrape with nothing new changes nothing; the next increments add to the totals once.
    expect(await registry.metrics()).toBe(first)
    pending.add(4, '/v1/completions', '200')
    expect(await registry.metrics()).toContain('tandem_x_total{route="/v1/completions",status="200"} 7')
  })
})
