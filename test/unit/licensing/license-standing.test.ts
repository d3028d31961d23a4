import { describe, expect, it } from 'vitest'
import { openLicensingDb } from '../../../src-main/licensing/db'
import { licenseStanding } from '../../../src-main/licensing/licenseStanding'
import { addMonths, monthFromIssue } from '../../../src-main/licensing/accessPeriod'

const DAY = 86_400_000
const ACCESS = JSON.stringify({
  models: null,
  tokens_per_period: 1000,
  requests_per_minute: null,
  concurrent_streams: null,
})

/** A licensing database with one license row (on a tier whose access is `access`) as the standing reads it. */
function withLicense(
  row: { status: string; expires_at: number | null; grace_period_days: number; issued_at?: number },
  access: string | null = ACCESS,
) {
  const db = openLicensingDb(':memory:', { now: () => 0 })
  db.pragma('foreign_keys = OFF')
  db.prepare(
    `INSERT INTO policies (id, product_id, slug, name, created_at, updated_at, access)
     VALUES ('pol1', 'p1', 'api', 'API', 0, 0, ?)`,
  ).run(access)
  db.prepare(
    `INSERT INTO licenses (id, product_id, policy_id, status, source, license_key, issued_at, expires_at, grace_period_days,
       max_machines, entitlements, is_trial, updated_at)
     VALUES ('lic1', 'p1', 'pol1', @status, 'complimentary', 'K', @issued_at, @expires_at, @grace_period_days, 1, '[]', 0, 0)`,
  ).run({ issued_at: 0, ...row })
  return db
}

const refusal = (db: ReturnType<typeof withLicense>, now: number, id = 'lic1') =>
  licenseStanding(db, { now: () => now }).check(id).refusal

describe('a license-bound key asks whether its license stands', () => {
  it('an active license stands; suspended and revoked ones say so; a missing one no longer exists', () => {
    const now = 10 * DAY
    expect(refusal(withLicense({ status: 'active', expires_at: null, grace_period_days: 0 }), now)).toBeNull()
    expect(refusal(withLicense({ status: 'suspended', expires_at: null, grace_period_days: 0 }), now)).toBe(
      'is suspended',
    )
    expect(refusal(withLicense({ status: 'revoked', expires_at: null, grace_period_days: 0 }), now)).toBe('is revoked')
    expect(refusal(withLicense({ status: 'active', expires_at: null, grace_period_days: 0 }), now, 'nope')).toBe(
      'no longer exists',
    )
  })

  it('a lapsed license stands through its grace period, then stops', () => {
    const db = withLicense({ status: 'active', expires_at: 5 * DAY, grace_period_days: 3 })
    expect(refusal(db, 7 * DAY)).toBeNull()
    expect(refusal(db, 8 * DAY)).toMatch(/^expired on 1970-01-06/)
  })

  it('a license whose tier sells no access (or an unreadable one) is refused, never unlimited', () => {
    expect(refusal(withLicense({ status: 'active', expires_at: null, grace_period_days: 0 }, null), DAY)).toBe(
      'is on a tier that no longer includes API access',
    )
    expect(refusal(withLicense({ status: 'active', expires_at: null, grace_period_days: 0 }, '{"models":'), DAY)).toBe(
      'is on a tier that no longer includes API access',
    )
  })
})

describe("a license's access period and quota", () => {
  const jan31 = Date.UTC(2026, 0, 31, 12)

  it('a month from issue: the 31st ends on the last day of a shorter month, and the clock going back finds the earlier period', () => {
    expect(new Date(addMonths(jan31, 1)).toISOString()).toBe('2026-02-28T12:00:00.000Z')
    expect(new Date(addMonths(jan31, 2)).toISOString()).toBe('2026-03-31T12:00:00.000Z')
    const inMarch = monthFromIssue(jan31, Date.UTC(2026, 2, 15))
    expect([new Date(inMarch.start).toISOString(), new Date(inMarch.end).toISOString()]).toEqual([
      '2026-02-28T12:00:00.000Z',
      '2026-03-31T12:00:00.000Z',
    ])
    // One millisecond before a boundary is still the period before it; the boundary opens the next.
    expect(monthFromIssue(jan31, addMonths(jan31, 2) - 1).start).toBe(addMonths(jan31, 1))
    expect(monthFromIssue(jan31, addMonths(jan31, 2)).start).toBe(addMonths(jan31, 2))
    expect(monthFromIssue(jan31, jan31 - DAY).start).toBe(jan31)
  })

  it("a license's allowance is its tier's quota plus the top-ups bought in the period", () => {
    const db = withLicense({ status: 'active', expires_at: null, grace_period_days: 0, issued_at: jan31 })
    const now = Date.UTC(2026, 1, 10)
    db.prepare(
      `INSERT INTO access_top_ups (id, license_id, tokens, source, created_at) VALUES
         ('t1', 'lic1', 500, 'admin', ?), ('t2', 'lic1', 70, 'admin', ?)`,
    ).run(Date.UTC(2026, 1, 5), Date.UTC(2026, 0, 31, 13) - 2 * DAY)
    const checked = licenseStanding(db, { now: () => now }).check('lic1')
    // t2 was bought before this period began: it does not carry over.
    expect(checked.allowance).toEqual({
      tokens: 1500,
      topUpTokens: 500,
      audioSeconds: null,
      periodStart: jan31,
      resetsAt: addMonths(jan31, 1),
    })
  })

  it("a tier's audio minutes are its allowance's audio seconds (top-ups are tokens only)", () => {
    const db = withLicense(
      { status: 'active', expires_at: null, grace_period_days: 0 },
      JSON.stringify({ audio_minutes_per_period: 90 }),
    )
    db.prepare(
      "INSERT INTO access_top_ups (id, license_id, tokens, source, created_at) VALUES ('t1', 'lic1', 500, 'admin', 1)",
    ).run()
    expect(licenseStanding(db, { now: () => 2 }).check('lic1').allowance).toMatchObject({
      tokens: null,
      topUpTokens: 0,
      audioSeconds: 5400,
    })
  })

  it("a subscription's period is its paid cycle, and it stays that cycle while the renewal is late", () => {
    const db = withLicense({ status: 'active', expires_at: null, grace_period_days: 0, issued_at: 0 })
    db.prepare(
      `INSERT INTO subscriptions (id, license_id, policy_id, listed_currency, listed_value, period_days, next_renewal_at,
         due_at, created_at, updated_at) VALUES ('s1', 'lic1', 'pol1', 'SAT', 1000, 30, ?, ?, 0, 0)`,
    ).run(60 * DAY, 60 * DAY)
    const at = (now: number) => licenseStanding(db, { now: () => now }).check('lic1').allowance
    expect(at(45 * DAY)).toMatchObject({ periodStart: 30 * DAY, resetsAt: 60 * DAY })
    expect(at(61 * DAY)).toMatchObject({ periodStart: 30 * DAY, resetsAt: 60 * DAY })
  })
})
