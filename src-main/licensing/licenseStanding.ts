import type { Clock } from '../lib/clock'
import type { LicenseCheck, LicenseStanding } from '../platform/accessKeys'
import { subscriptionCycle, monthFromIssue, type AccessPeriod } from './accessPeriod'
import type { LicensingDb } from './db'
import { iso, parseAccess } from './json'
import { expiryOf, type LicenseRow } from './licenseRecords'

export type StandingRow = Pick<LicenseRow, 'status' | 'expires_at' | 'grace_period_days' | 'issued_at'> & {
  access: string | null
  due_at: number | null
  period_days: number | null
}

/** The period a license's quota counts in now: its subscription's cycle, else a month from issue. */
export function accessPeriodOf(
  r: Pick<StandingRow, 'issued_at' | 'due_at' | 'period_days'>,
  now: number,
): AccessPeriod {
  return r.due_at !== null && r.period_days !== null
    ? subscriptionCycle(r.due_at, r.period_days)
    : monthFromIssue(r.issued_at, now)
}

/** What a standing check reads of a license: its row, its tier's access and its subscription's cycle. */
export const STANDING_COLUMNS =
  'l.status, l.expires_at, l.grace_period_days, l.issued_at, p.access, s.due_at, s.period_days'

/**
 * A license's standing from its row at `now`; `topUps` says what top-ups added inside a period
 * (asked only when the tier has a quota). The same answer whether one license is checked (the
 * gateway's request) or all of them at once (the operator's report).
 */
export function standingOf(
  row: StandingRow | undefined,
  now: number,
  topUps: (period: AccessPeriod) => number,
): LicenseCheck {
  if (!row) return { refusal: 'no longer exists' }
  if (row.status !== 'active') return { refusal: `is ${row.status}` }
  if (expiryOf(row, now).expired) return { refusal: `expired on ${iso(row.expires_at!)}` }
  const access = parseAccess(row.access)
  if (access === null) return { refusal: 'is on a tier that no longer includes API access' }
  const period = accessPeriodOf(row, now)
  const quota = access.tokens_per_period
  const added = quota === null ? 0 : topUps(period)
  return {
    refusal: null,
    allowance: {
      tokens: quota === null ? null : quota + added,
      topUpTokens: added,
      audioSeconds: access.audio_minutes_per_period === null ? null : access.audio_minutes_per_period * 60,
      periodStart: period.start,
      resetsAt: period.end,
    },
  }
}

/**
 * The gateway's question about a license's key (issue 45), answered from the license's row on each
 * request: a revoked or suspended license, or one past its expiry and grace (a subscription that
 * lapsed or was cancelled past its cycle), stops its key at the next request; a standing one gets
 * its tier's token quota (plus the period's top-ups), its audio seconds and the period it counts in, so an upgrade's
 * quota applies at once. One indexed read, and one more for top-ups when the tier has a quota.
 */
export function licenseStanding(db: LicensingDb, clock: Clock): LicenseStanding {
  const read = db.prepare(
    `SELECT ${STANDING_COLUMNS}
       FROM licenses l LEFT JOIN policies p ON p.id = l.policy_id LEFT JOIN subscriptions s ON s.license_id = l.id
      WHERE l.id = ?`,
  )
  const topUps = db.prepare(
    'SELECT COALESCE(SUM(tokens), 0) AS n FROM access_top_ups WHERE license_id = ? AND created_at >= ? AND created_at < ?',
  )
  return {
    check(licenseId): LicenseCheck {
      try {
        return standingOf(
          read.get(licenseId) as StandingRow | undefined,
          clock.now(),
          (period) => (topUps.get(licenseId, period.start, period.end) as { n: number }).n,
        )
      } catch {
        return { refusal: 'cannot be checked now (the licensing database is unavailable)' }
      }
    },
  }
}
