import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { EventBus } from '../../../src-main/platform/eventBus'
import { probeAfterPlacementJobs, type ProbeStart } from '../../../src-main/services/deepHealthHook'
import { placementsChanged, placementStep } from '../../helpers/placementStep'

// Issue 46, item 4: after a swap deep health probes at once, as the README says.
describe('probeAfterPlacementJobs', () => {
  const rig = () => {
    const bus = new EventBus(new ManualClock())
    const asked: string[] = []
    const unfollow = probeAfterPlacementJobs(bus, {
      requestProbe: (service, reason): ProbeStart => {
        asked.push(`${service}: ${reason}`)
        return 'started'
      },
    })
    return { bus, asked, unfollow }
  }

  it('probes the engine a job left serving the moment the job is ready, not at the next round', () => {
    const { bus, asked } = rig()
    bus.publish('placements.changed', placementsChanged(placementStep({ phase: 'validating' })))
    bus.publish('placements.changed', placementsChanged(placementStep({ phase: 'loading' })))
    expect(asked).toEqual([])
    bus.publish('placements.changed', placementsChanged(placementStep({ phase: 'ready' })))
    expect(asked).toEqual(['llm: a placement job left coder serving on node1'])
    bus.publish('placements.changed', placementsChanged(placementStep({ phase: 'ready', placement_id: 'node2' })))
    expect(asked.at(-1)).toBe('llm@node2: a placement job left coder serving on node2')
  })

  it('does not probe after a failed job, a stop, or once unsubscribed', () => {
    const { bus, asked, unfollow } = rig()
    bus.publish('placements.changed', placementsChanged(placementStep({ phase: 'failed' })))
    const stop = placementsChanged(placementStep({ phase: 'ready' }))
    stop.changing = {
      id: 'node1',
      key: 'coder',
      action: 'stop',
      phase: 'ready',
      displaces: [],
      eta_s: null,
      job_id: 'swap-1',
    }
    bus.publish('placements.changed', stop)
    unfollow()
    bus.publish('placements.changed', placementsChanged(placementStep({ phase: 'ready' })))
    expect(asked).toEqual([])
  })
})
