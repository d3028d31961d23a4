import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { RateLimiter } from '../../../src-main/lib/rateLimit'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { SessionStore } from '../../../src-main/app/sessions'
import { readCookie } from '../../../src-main/http/session'

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

describe('admin sessions', () => {
  const store = (dir: string, token: string, clock: ManualClock) =>
    new SessionStore({
      file: path.join(dir, 'sessions.json'),
      adminToken: token,
      clock,
      logger: createLogger({ sink: new MemorySink() }),
    })

  it('verifies its own session, refuses tampering and expiry, and keeps only hashes on disk (mode 0600)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-sess-'))
    const clock = new ManualClock()
    const s = store(dir, 'admin-token-aaaaaaaaaaaa', clock)
    const { value } = s.issue()
    expect(s.verify(value)).toBe(true)
    expect(s.verify(value.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')))).toBe(false)
    expect(s.verify(undefined)).toBe(false)
    const file = fs.readFileSync(path.join(dir, 'sessions.json'), 'utf8')
    expect(file).not.toContain(value)
    expect(fs.statSync(path.join(dir, 'sessions.json')).mode & 0o777).toBe(0o600)
    clock.advance(12 * 3600 * 1000 + 1)
    expect(s.verify(value)).toBe(false)
  })

  it('a logout survives a restart, and a rotated admin token ends every session', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-sess-'))
    const clock = new ManualClock()
    const first = store(dir, 'admin-token-aaaaaaaaaaaa', clock)
    const kept = first.issue().value
    const ended = first.issue().value
    first.revoke(ended)
    const restarted = store(dir, 'admin-token-aaaaaaaaaaaa', clock)
    expect(restarted.verify(kept)).toBe(true)
    expect(restarted.verify(ended)).toBe(false)
    expect(store(dir, 'another-token-bbbbbbbbbb', clock).verify(kept)).toBe(false)
  })

  it('reads one cookie out of a header; a malformed escape is kept as written, never a crash', () => {
    expect(readCookie('a=1; tandem_session=abc; b=2', 'tandem_session')).toBe('abc')
    expect(readCookie('a=1', 'tandem_session')).toBeUndefined()
    expect(readCookie('tandem_session=%E0%A4%A', 'tandem_session')).toBe('%E0%A4%A')
  })
})
