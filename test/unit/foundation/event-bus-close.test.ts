import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { EventBus } from '../../../src-main/platform/eventBus'

// A restart stops the old core: its event streams end so pages reconnect to the new one.
describe('closing the event bus', () => {
  it('ends a stream waiting for the next event, and one opened after', async () => {
    const bus = new EventBus(new ManualClock(0))
    const waiting = bus.stream(undefined, new AbortController().signal)
    const next = waiting.next()
    bus.close()
    expect(await next).toEqual({ done: true, value: undefined })
    const late = bus.stream(undefined, new AbortController().signal)
    expect(await late.next()).toEqual({ done: true, value: undefined })
  })
})
