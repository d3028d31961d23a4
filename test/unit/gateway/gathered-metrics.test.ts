import { describe, expect, it } from 'vitest'
import { Histogram, Registry } from 'prom-client'
import { GatheredHistogram } from '../../../src-main/metrics/gathered'

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
      ours.record(`${route}\u0000${key}`, () => ({ route, key }), value)
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

  it('asks for the labels once per series and skips values that are not finite', async () => {
    const { ours, b } = pair()
    let asked = 0
    const labels = () => (asked++, { route: '/v1/completions', key: 'none' })
    for (const value of [0.001, 0.5, Number.NaN, Infinity, 3]) ours.record('k', labels, value)
    expect(asked).toBe(1)
    const text = await b.metrics()
    expect(text).toContain('tandem_x_seconds_count{route="/v1/completions",key="none"} 3')
    expect(text).toContain('tandem_x_seconds_sum{route="/v1/completions",key="none"} 3.501')
    expect(text).toContain('tandem_x_seconds_bucket{le="0.25",route="/v1/completions",key="none"} 1')
    expect(text).toContain('tandem_x_seconds_bucket{le="1",route="/v1/completions",key="none"} 2')
  })

  it('is fed only through record, and reset empties it', async () => {
    const { ours, b } = pair()
    expect(() => ours.observe({ route: 'r', key: 'k' }, 1)).toThrow(/record\(\)/)
    ours.record('k', () => ({ route: 'r', key: 'k' }), 1)
    ours.reset()
    expect(await b.metrics()).not.toContain('_count')
  })
})
