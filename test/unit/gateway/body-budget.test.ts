import { describe, expect, it } from 'vitest'
import { ApiError } from '../../../src-main/contract/errors'
import {
  BODY_BUDGET_RETRY_S,
  BodyBudget,
  bodyBudgetLimits,
  bodyHolders,
} from '../../../src-main/gateway/relay/bodyBudget'

/**
 * Issue 33 #1: relayed JSON bodies (up to 64 MiB each) were held in memory with nothing bounding
 * their sum. They are now charged to one shared budget, and to their address and key, each of which
 * may hold half of it.
 */
const KiB = 1024

/** What `fn` threw, as an ApiError. */
function refusal(fn: () => void): ApiError {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError)
    return err as ApiError
  }
  throw new Error('expected a refusal')
}

describe('the relayed body budget', () => {
  it('charges declared lengths and chunks, and frees them on release, once', () => {
    const budget = new BodyBudget(bodyBudgetLimits(1000 * KiB))
    const a = budget.open(['address 10.0.0.1'])
    a.charge(100 * KiB)
    a.charge(50 * KiB)
    const b = budget.open(['address 10.0.0.2'])
    b.charge(200 * KiB)
    expect(budget.inUse).toBe(350 * KiB)
    expect(budget.heldBy('address 10.0.0.1')).toBe(150 * KiB)
    a.release()
    a.release()
    expect(budget.inUse).toBe(200 * KiB)
    expect(budget.heldBy('address 10.0.0.1')).toBe(0)
    b.release()
    expect(budget.inUse).toBe(0)
    // Charging after release (a chunk racing the end) charges nothing.
    b.charge(10 * KiB)
    expect(budget.inUse).toBe(0)
  })

  it('refuses with 503 and Retry-After when the whole budget is held, charging nothing', () => {
    const budget = new BodyBudget({ totalBytes: 1000 * KiB, shareBytes: 600 * KiB, soldKeyShareBytes: 300 * KiB })
    budget.open(['address a']).charge(500 * KiB)
    budget.open(['address b']).charge(400 * KiB)
    const c = budget.open(['address c'])
    const err = refusal(() => c.charge(200 * KiB))
    expect(err.status).toBe(503)
    expect(err.headers['Retry-After']).toBe(String(BODY_BUDGET_RETRY_S))
    expect(err.message).toMatch(/no room for this request body now \(request bodies in progress hold/)
    expect(budget.inUse).toBe(900 * KiB)
    expect(budget.heldBy('address c')).toBe(0)
    c.charge(100 * KiB)
    expect(budget.inUse).toBe(1000 * KiB)
  })

  it('lets one address, or one key, hold at most half the budget', () => {
    const budget = new BodyBudget(bodyBudgetLimits(1000 * KiB))
    const holders = bodyHolders('10.0.0.1', undefined)
    budget.open(holders).charge(300 * KiB)
    budget.open(holders).charge(200 * KiB)
    const third = refusal(() => budget.open(holders).charge(1 * KiB))
    expect(third.status).toBe(503)
    expect(third.message).toMatch(/this address's bodies in progress/)
    // Another address still finds room.
    budget.open(bodyHolders('10.0.0.2', undefined)).charge(300 * KiB)

    const key = { kind: 'key', id: 'k1', name: 'app', models: null, licensed: false } as const
    const fresh = new BodyBudget(bodyBudgetLimits(1000 * KiB))
    fresh.open(bodyHolders('10.0.0.1', key)).charge(300 * KiB)
    fresh.open(bodyHolders('10.0.0.2', key)).charge(200 * KiB)
    const sameKey = refusal(() => fresh.open(bodyHolders('10.0.0.3', key)).charge(1 * KiB))
    expect(sameKey.status).toBe(503)
    expect(sameKey.message).toMatch(/this key's bodies in progress/)
  })

  it('lets a key sold with a license hold a third, so two such keys never starve a third (issue 45)', () => {
    const sold = (id: string) => ({ kind: 'key', id, name: id, models: null, licensed: true }) as const
    const budget = new BodyBudget(bodyBudgetLimits(900 * KiB))
    // Two buyers each hold all they may, from their own addresses.
    budget.open(bodyHolders('203.0.113.1', sold('a'))).charge(300 * KiB)
    budget.open(bodyHolders('203.0.113.2', sold('b'))).charge(300 * KiB)
    const over = refusal(() => budget.open(bodyHolders('203.0.113.4', sold('a'))).charge(1 * KiB))
    expect(over.status).toBe(503)
    expect(over.message).toMatch(/this key's bodies in progress hold 300 KiB|this key's bodies in progress/)
    // A third buyer still finds its whole share.
    const third = budget.open(bodyHolders('203.0.113.3', sold('c')))
    third.charge(300 * KiB)
    expect(budget.heldBy('sold key c')).toBe(300 * KiB)
    // A body one sold key could never hold is 413 before a byte is read; the operator's keys keep half.
    expect(refusal(() => budget.open(bodyHolders('203.0.113.5', sold('d'))).bound(301 * KiB)).status).toBe(413)
    const own = { kind: 'key', id: 'lan', name: 'lan', models: null, licensed: false } as const
    expect(() => budget.open(bodyHolders('192.168.1.2', own)).bound(450 * KiB)).not.toThrow()
  })

  it('refuses with 413 a body larger than one client may ever hold', () => {
    const budget = new BodyBudget(bodyBudgetLimits(1000 * KiB))
    const r = budget.open(['address a'])
    r.charge(400 * KiB)
    const err = refusal(() => r.charge(101 * KiB))
    expect(err.status).toBe(413)
    expect(r.held).toBe(400 * KiB)
  })

  it('charges admin and open callers to their address only', () => {
    expect(bodyHolders('::1', { kind: 'admin' })).toEqual(['address ::1'])
    expect(bodyHolders('::1', { kind: 'open' })).toEqual(['address ::1'])
    expect(bodyHolders('::1', { kind: 'legacy' })).toEqual(['address ::1', 'key (legacy)'])
  })

  it('allocates declared buffers ahead only within the budget, charging nothing until bytes arrive (issue 42)', () => {
    const budget = new BodyBudget(bodyBudgetLimits(1000 * KiB))
    const a = budget.open(['address a'])
    const b = budget.open(['address b'])
    // A declared length one client could never hold is refused before anything is allocated.
    expect(refusal(() => a.bound(2 * 600 * KiB)).status).toBe(413)
    expect(a.bufferAhead(600 * KiB)?.length).toBe(600 * KiB)
    expect(budget.inUse).toBe(0)
    // Beyond the budget's total of buffers ahead: none, the chunks are joined at the end instead.
    expect(b.bufferAhead(600 * KiB)).toBeNull()
    a.release()
    expect(b.bufferAhead(600 * KiB)).not.toBeNull()
    b.release()
    expect(budget.inUse).toBe(0)
  })
})
