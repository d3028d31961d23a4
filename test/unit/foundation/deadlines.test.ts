import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { Deadlines } from '../../../src-main/core/deadlines'

/** Deadlines against fake timers and a clock moved by hand with them. */
describe('Deadlines', () => {
  let now = 0
  let expired: string[]
  let deadlines: Deadlines<string>

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    now = 1000
    expired = []
    deadlines = new Deadlines<string>(
      (owner, ms) => expired.push(`${owner}@${ms}`),
      () => now,
    )
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  /** Moves the clock and the timers together. */
  const advance = (ms: number): void => {
    now += ms
    vi.advanceTimersByTime(ms)
  }

  it('expires each owner once its time has passed, in the order they started, and not before', () => {
    deadlines.start('a', 100)
    advance(30)
    deadlines.start('b', 100)
    advance(69)
    expect(expired).toEqual([])
    advance(1)
    expect(expired).toEqual(['a@100'])
    advance(29)
    expect(expired).toEqual(['a@100'])
    advance(1)
    expect(expired).toEqual(['a@100', 'b@100'])
    expect(deadlines.pending).toBe(0)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('never expires a cancelled deadline; a cancelled head leaves the next one its own time', () => {
    const a = deadlines.start('a', 100)
    advance(50)
    deadlines.start('b', 100)
    a.cancel()
    a.cancel() // a second cancel is harmless
    advance(50)
    expect(expired).toEqual([])
    advance(49)
    expect(expired).toEqual([])
    advance(1)
    expect(expired).toEqual(['b@100'])
  })

  it('keeps one timer for any number of deadlines of one length', () => {
    const many = Array.from({ length: 10_000 }, (_, i) => deadlines.start(`r${i}`, 300_000))
    expect(vi.getTimerCount()).toBe(1)
    expect(deadlines.pending).toBe(10_000)
    for (const d of many) d.cancel()
    expect(deadlines.pending).toBe(0)
    advance(300_000)
    expect(expired).toEqual([])
    // The list emptied: its timer is gone with it.
    expect(vi.getTimerCount()).toBe(0)
  })

  it('keeps lengths apart: a short deadline started later passes before a long one started earlier', () => {
    deadlines.start('call', 1_800_000)
    deadlines.start('body', 300_000)
    advance(300_000)
    expect(expired).toEqual(['body@300000'])
    advance(1_500_000)
    expect(expired).toEqual(['body@300000', 'call@1800000'])
  })

  it('waits again when the timer fires before the clock says the head is due', () => {
    deadlines.start('a', 100)
    // The timer fires at 100 ms of timer time, but only 98 ms have passed on the clock.
    now += 98
    vi.advanceTimersByTime(100)
    expect(expired).toEqual([])
    expect(vi.getTimerCount()).toBe(1)
    now += 2
    vi.advanceTimersByTime(2)
    expect(expired).toEqual(['a@100'])
  })

  it('keeps one timer when an expiry starts a deadline in the list that is firing', () => {
    const chained = new Deadlines<string>(
      (owner) => {
        expired.push(owner)
        if (owner === 'first') chained.start('second', 100)
      },
      () => now,
    )
    chained.start('first', 100)
    chained.start('other', 100)
    advance(100)
    expect(expired).toEqual(['first', 'other'])
    expect(vi.getTimerCount()).toBe(1)
    advance(100)
    expect(expired).toEqual(['first', 'other', 'second'])
    expect(vi.getTimerCount()).toBe(0)
  })

  it('lets an expiry cancel a deadline that was due at the same time', () => {
    let b: { cancel(): void } | null = null
    const d = new Deadlines<string>(
      (owner) => {
        expired.push(owner)
        b?.cancel()
      },
      () => now,
    )
    d.start('a', 100)
    b = d.start('b', 100)
    advance(100)
    expect(expired).toEqual(['a'])
    expect(d.pending).toBe(0)
  })
})
