import type { Clock } from '../lib/clock'
import type { LicenseStanding } from '../platform/accessKeys'
import type { LicensingDb } from './db'
import { iso } from './json'
import { expiryOf, type LicenseRow } from './licenseRecords'

type StandingRow = Pick<LicenseRow, 'status' | 'expires_at' | 'grace_period_days'>

/**
 * The gateway's question about a license's key (issue 45), answered from the license's row on each
 * request: a revoked or suspended license, or one past its expiry and grace (a subscription that
 * lapsed or was cancelled past its cycle), stops its key at the next request. One indexed read.
 */
export function licenseStanding(db: LicensingDb, clock: Clock): LicenseStanding {
  const read = db.prepare('SELECT status, expires_at, grace_period_days FROM licenses WHERE id = ?')
  return {
    refusal(licenseId) {
      let row: StandingRow | undefined
      try {
        row = read.get(licenseId) as StandingRow | undefined
      } catch {
        return 'cannot be checked now (the licensing database is unavailable)'
      }
      if (!row) return 'no longer exists'
      if (row.status !== 'active') return `is ${row.status}`
      const exp = expiryOf(row, clock.now())
      if (exp.expired) return `expired on ${iso(row.expires_at!)}`
      return null
    },
  }
}
