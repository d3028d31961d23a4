import { Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { clusterMetrics } from '../../../src-main/metrics/clusterMetrics'
import { EventBus } from '../../../src-main/platform/eventBus'
import { placementsChanged, placementStep } from '../../helpers/placementStep'

/**
 * Swap counters and durations read the job's step from `placements.changed` (issue 40, item 4);
 * `swap.state`, the alias the daemon still publishes beside it for outside clients, is not read.
 */
describe('the swap metrics', () => {
  const rig = () => {
    const clock = new ManualClock()
    const registry = new Registry()
    const bus = new EventBus(clock)
    bus.subscribe(clusterMetrics([registry]))
    /** Publishes a step as the daemon does: the alias, then the view with the step. */
    const step = (over: Parameters<typeof placementStep>[0]) => {
      const s = placementStep(over)
      bus.publish('swap.state', s)
      bus.publish('placements.changed', placementsChanged(s))
    }
    const value = async (name: string, result: string) => {
      // A histogram's _sum and _count are values of the histogram, named by metricName.
      const values = (await registry.getMetricsAsJSON()).flatMap((m) =>
        m.values.map((v) => ({ ...v, name: (v as { metricName?: string }).metricName ?? m.name })),
      )
      return values.find((v) => v.name === name && v.labels.result === result)?.value ?? 0
    }
    return { clock, bus, step, value }
  }

  it('counts a swap that ends ready once, timed from its first step', async () => {
    const r = rig()
    r.step({ phase: 'validating' })
    r.clock.advance(40_000)
    r.step({ phase: 'loading' })
    r.clock.advance(20_000)
    r.step({ phase: 'ready' })
    expect(await r.value('tandem_swaps_total', 'succeeded')).toBe(1)
    expect(await r.value('tandem_swap_duration_seconds_sum', 'succeeded')).toBe(60)
    expect(await r.value('tandem_swap_duration_seconds_count', 'succeeded')).toBe(1)
  })

  it('counts a failed swap from placements.changed alone; the alias alone counts nothing', async () => {
    const r = rig()
    r.bus.publish('swap.state', placementStep({ phase: 'validating', job_id: 'swap-2' }))
    r.bus.publish('swap.state', placementStep({ phase: 'failed', job_id: 'swap-2' }))
    expect(await r.value('tandem_swaps_total', 'failed')).toBe(0)
    r.bus.publish('placements.changed', placementsChanged(placementStep({ phase: 'validating', job_id: 'swap-3' })))
    r.clock.advance(5_000)
    r.bus.publish('placements.changed', placementsChanged(null))
    r.bus.publish('placements.changed', placementsChanged(placementStep({ phase: 'failed', job_id: 'swap-3' })))
    expect(await r.value('tandem_swaps_total', 'failed')).toBe(1)
    expect(await r.value('tandem_swap_duration_seconds_sum', 'failed')).toBe(5)
  })
})
