// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import type { BackendApi, OutputOf } from '../../../src-renderer/api'
import Timeline from '../../../src-renderer/components/cluster/Timeline.vue'
import { mountWith, unmountAll } from './mount'

type Connectivity = OutputOf<'getConnectivity'>

const api = { transport: 'http', call: async () => ({}), subscribe: () => () => undefined } as unknown as BackendApi
const NOW = Date.UTC(2026, 10, 27, 12)
const MIN = 60_000

/** Issue 31, finding 3: a model swap's llm down time is drawn as a planned swap, not an outage. */
describe('Connectivity timeline', () => {
  afterEach(() => unmountAll())

  it('draws the llm down during a swap as a planned swap naming both models, and a plain outage as down', async () => {
    const planned = 'planned swap: sim/first → second'
    const data: Connectivity = {
      macs: {},
      subjects: { llm: { state: 'down', last_change: NOW - 5 * MIN } },
      events: [
        { at: NOW - 30 * MIN, subject: 'llm', kind: 'transition', state: 'down', up_seconds: 600, planned },
        { at: NOW - 28 * MIN, subject: 'llm', kind: 'transition', state: 'up', down_seconds: 120, planned },
        { at: NOW - 5 * MIN, subject: 'llm', kind: 'transition', state: 'down', up_seconds: 1380 },
      ],
    }
    const el = await mountWith(Timeline, api, { data, now: NOW, windowMs: 60 * MIN })
    const segs = [...el.querySelectorAll('.tl-seg')]
    const swap = segs.filter((s) => s.classList.contains('planned'))
    expect(swap).toHaveLength(1)
    expect(swap[0]!.getAttribute('title')).toContain(planned)
    expect(swap[0]!.classList.contains('down')).toBe(false)
    // The down after the swap is an outage.
    expect(segs.at(-1)!.classList.contains('down')).toBe(true)
    expect(segs.at(-1)!.getAttribute('title')).not.toContain('planned')
  })
})
