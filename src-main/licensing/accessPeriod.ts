/**
 * An access license's period (issue 45): the subscription's paid cycle for a recurring tier, else
 * a calendar month from the license's issue (the 31st's month ends on the last day of a shorter
 * month). The quota resets when the period ends.
 */
import { DAY_MS } from './licenseRecords'

export interface AccessPeriod {
  readonly start: number
  readonly end: number
}

/** `from` moved `months` calendar months on in UTC, its day clamped to the target month's length. */
export function addMonths(from: number, months: number): number {
  const d = new Date(from)
  const y = d.getUTCFullYear()
  const m = d.getUTCMonth() + months
  const last = new Date(Date.UTC(y, m + 1, 0)).getUTCDate()
  return Date.UTC(
    y,
    m,
    Math.min(d.getUTCDate(), last),
    d.getUTCHours(),
    d.getUTCMinutes(),
    d.getUTCSeconds(),
    d.getUTCMilliseconds(),
  )
}

/** The calendar month from `issuedAt` that holds `now` (the first one when the clock reads earlier). */
export function monthFromIssue(issuedAt: number, now: number): AccessPeriod {
  const a = new Date(issuedAt)
  const b = new Date(now)
  let k = Math.max(0, (b.getUTCFullYear() - a.getUTCFullYear()) * 12 + b.getUTCMonth() - a.getUTCMonth())
  if (k > 0 && addMonths(issuedAt, k) > now) k--
  return { start: addMonths(issuedAt, k), end: addMonths(issuedAt, k + 1) }
}

/**
 * The cycle a subscription has paid for ends at its `due_at`; while a renewal is late the period
 * stays that cycle (its quota resets when the renewal is paid), never a free new one.
 */
export function subscriptionCycle(dueAt: number, periodDays: number): AccessPeriod {
  return { start: dueAt - periodDays * DAY_MS, end: dueAt }
}
