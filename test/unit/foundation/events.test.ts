import { describe, expect, expectTypeOf, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { EventBus } from '../../../src-main/platform/eventBus'
import { contract } from '../../../src-main/contract'
import { EventStreamItem, eventPayloads, type EventPayload } from '../../../src-main/contract/events'

const transition = (subject: string, state: 'up' | 'down') => ({
  at: 1,
  subject,
  kind: 'transition' as const,
  state,
})

/** Reads `n` items from a stream, then closes it. */
async function take(it: AsyncGenerator<unknown>, n: number): Promise<unknown[]> {
  const out: unknown[] = []
  while (out.length < n) {
    const r = await it.next()
    if (r.done) break
    out.push(r.value)
  }
  await it.return(undefined)
  return out
}

describe('the event table', () => {
  it('has the kinds of push event, each a zod payload', () => {
    expect(Object.keys(eventPayloads).sort()).toEqual([
      'connectivity.transition',
      'deephealth.result',
      'hardware.snapshot',
      'job.update',
      'placements.changed',
      'service.state',
      'swap.state',
    ])
    expectTypeOf<EventPayload<'connectivity.transition'>>().toHaveProperty('subject')
  })

  it('serves them from one admin stream method, GET /api/events', () => {
    expect(contract.streamEvents).toMatchObject({ http: 'GET /api/events', stream: true })
    expect(contract.streamEvents.httpOnly).toBeFalsy()
  })

  it('checks a delivered event against its payload schema', () => {
    const ok = { seq: 1, at: 5, name: 'connectivity.transition', data: transition('node1', 'down') }
    expect(EventStreamItem.safeParse(ok).success).toBe(true)
    expect(EventStreamItem.safeParse({ ...ok, data: { subject: 'node1' } }).success).toBe(false)
    expect(EventStreamItem.safeParse({ ...ok, name: 'no.such.event' }).success).toBe(false)
  })
})

describe('the event bus', () => {
  it('numbers events and type-checks publish against the table', async () => {
    const bus = new EventBus(new ManualClock(1000))
    const stream = bus.stream(undefined, new AbortController().signal)
    const first = stream.next()
    bus.publish('connectivity.transition', transition('node1', 'down'))
    // A payload that does not match its event name is refused at compile time (the typecheck runs these).
    expectTypeOf(transition('node1', 'up')).not.toExtend<EventPayload<'job.update'>>()
    expectTypeOf(bus.publish<'job.update'>)
      .parameter(1)
      .toEqualTypeOf<EventPayload<'job.update'>>()
    bus.publish('connectivity.transition', transition('node1', 'up'))
    expect((await first).value).toEqual({
      seq: 1,
      at: 1000,
      name: 'connectivity.transition',
      data: transition('node1', 'down'),
    })
    expect(bus.lastSeq).toBe(2)
    await stream.return(undefined)
  })

  it('starts live without a cursor and replays what a resuming reader missed', async () => {
    const bus = new EventBus(new ManualClock())
    for (const s of ['a', 'b', 'c']) bus.publish('connectivity.transition', transition(s, 'down'))
    const resumed = bus.stream(1, new AbortController().signal)
    expect((await take(resumed, 2)).map((e) => (e as { seq: number }).seq)).toEqual([2, 3])

    const live = bus.stream(undefined, new AbortController().signal)
    const next = live.next()
    bus.publish('connectivity.transition', transition('d', 'up'))
    expect(((await next).value as { seq: number }).seq).toBe(4)
    await live.return(undefined)
  })

  it('keeps a bounded ring and tells a reader whose cursor is gone to re-read (gap, restart)', async () => {
    const bus = new EventBus(new ManualClock(), 3)
    for (let i = 0; i < 10; i++) bus.publish('connectivity.transition', transition(`n${i}`, 'down'))
    const old = await take(bus.stream(2, new AbortController().signal), 1)
    expect(old[0]).toMatchObject({ name: 'resync', seq: 10, data: { reason: 'gap' } })
    // Still held: the last three (8, 9, 10) replay after a cursor of 7.
    const held = await take(bus.stream(7, new AbortController().signal), 3)
    expect(held.map((e) => (e as { seq: number }).seq)).toEqual([8, 9, 10])
    // A cursor from before a restart is ahead of this run's events.
    const ahead = await take(bus.stream(500, new AbortController().signal), 1)
    expect(ahead[0]).toMatchObject({ name: 'resync', data: { reason: 'restart' } })
  })

  it('ends a waiting stream when its signal aborts, and counts open streams', async () => {
    const bus = new EventBus(new ManualClock())
    const abort = new AbortController()
    const stream = bus.stream(undefined, abort.signal)
    const pending = stream.next()
    expect(bus.listeners).toBe(1)
    abort.abort()
    expect((await pending).done).toBe(true)
    expect(bus.listeners).toBe(0)
  })
})
