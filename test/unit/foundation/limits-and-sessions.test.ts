import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/core/clock'
import { RateLimiter } from '../../../src-main/core/rateLimit'
import { SessionSigner, readCookie } from '../../../src-main/http/session'

describe('rate limiter', () => {
  it('allows a burst, refuses, then refills with time', () => {
    const clock = new ManualClock()
    const rl = new RateLimiter({ capacity: 3, refillPerSecond: 1, clock })
    expect([rl.take('a'), rl.take('a'), rl.take('a'), rl.take('a')]).toEqual([true, true, true, false])
    expect(rl.take('b')).toBe(true)
    expect(rl.retryAfterSeconds('a')).toBe(1)
    clock.advance(1000)
    expect(rl.take('a')).toBe(true)
    expect(rl.take('a')).toBe(false)
  })

  it('forgets the least recently used keys past its cap', () => {
    const rl = new RateLimiter({ capacity: 1, refillPerSecond: 0.001, clock: new ManualClock(), maxKeys: 2 })
    rl.take('a')
    rl.take('b')
    rl.take('c')
    expect(rl.available('a')).toBe(1)
    expect(rl.available('c')).toBe(0)
  })
})

describe('session cookies', () => {
  it('verifies its own cookie and refuses tampering, expiry, another token and revocation', () => {
    const clock = new ManualClock()
    const s = new SessionSigner('admin-token-aaaaaaaaaaaa', clock)
    const { value } = s.issue()
    expect(s.verify(value)).toBe(true)
    expect(s.verify(value.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')))).toBe(false)
    expect(s.verify(undefined)).toBe(false)
    expect(new SessionSigner('another-token-bbbbbbbbbb', clock).verify(value)).toBe(false)
    const other = s.issue().value
    s.revoke(value)
    expect(s.verify(value)).toBe(false)
    expect(s.verify(other)).toBe(true)
    clock.advance(12 * 3600 * 1000 + 1)
    expect(s.verify(other)).toBe(false)
  })

  it('reads one cookie out of a header', () => {
    expect(readCookie('a=1; tandem_session=v1.x; b=2', 'tandem_session')).toBe('v1.x')
    expect(readCookie('a=1', 'tandem_session')).toBeUndefined()
  })
})
