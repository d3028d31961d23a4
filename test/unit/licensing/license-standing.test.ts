import { describe, expect, it } from 'vitest'
import { openLicensingDb } from '../../../src-main/licensing/db'
import { licenseStanding } from '../../../src-main/licensing/licenseStanding'

const DAY = 86_400_000

/** A licensing database with one license row as the standing reads it. */
function withLicense(row: { status: string; expires_at: number | null; grace_period_days: number }) {
  const db = openLicensingDb(':memory:', { now: () => 0 })
  db.pragma('foreign_keys = OFF')
  db.prepare(
    `INSERT INTO licenses (id, product_id, status, source, license_key, issued_at, expires_at, grace_period_days,
       max_machines, entitlements, is_trial, updated_at)
     VALUES ('lic1', 'p1', @status, 'complimentary', 'K', 0, @expires_at, @grace_period_days, 1, '[]', 0, 0)`,
  ).run(row)
  return db
}

describe('a license-bound key asks whether its license stands', () => {
  it('an active license stands; suspended and revoked ones say so; a missing one no longer exists', () => {
    const now = { now: () => 10 * DAY }
    expect(
      licenseStanding(withLicense({ status: 'active', expires_at: null, grace_period_days: 0 }), now).refusal('lic1'),
    ).toBeNull()
    expect(
      licenseStanding(withLicense({ status: 'suspended', expires_at: null, grace_period_days: 0 }), now).refusal(
        'lic1',
      ),
    ).toBe('is suspended')
    expect(
      licenseStanding(withLicense({ status: 'revoked', expires_at: null, grace_period_days: 0 }), now).refusal('lic1'),
    ).toBe('is revoked')
    expect(
      licenseStanding(withLicense({ status: 'active', expires_at: null, grace_period_days: 0 }), now).refusal('nope'),
    ).toBe('no longer exists')
  })

  it('a lapsed license stands through its grace period, then stops', () => {
    const db = withLicense({ status: 'active', expires_at: 5 * DAY, grace_period_days: 3 })
    let t = 7 * DAY
    const standing = licenseStanding(db, { now: () => t })
    expect(standing.refusal('lic1')).toBeNull()
    t = 8 * DAY
    expect(standing.refusal('lic1')).toMatch(/^expired on 1970-01-06/)
  })
})
