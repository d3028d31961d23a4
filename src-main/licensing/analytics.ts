/**
 * Licensing analytics on the injected clock: revenue per UTC day per product and currency
 * (settled invoices; SAT listings count in sats), licenses issued per day per product, active
 * machines and licenses now. Days with nothing are left out (the chart fills them).
 *
 * Interface: new Analytics(db, clock); report(days) → AnalyticsView
 */
import type { AnalyticsView, Currency } from '../contract/licensing'
import type { Clock } from '../lib/clock'
import type { LicensingDb } from './db'

const DAY_MS = 86_400_000
const day = (ms: number): string => new Date(ms).toISOString().slice(0, 10)

export class Analytics {
  constructor(
    private readonly db: LicensingDb,
    private readonly clock: Clock,
  ) {}

  report(days: number): AnalyticsView {
    const now = this.clock.now()
    const from = Math.floor(now / DAY_MS) * DAY_MS - (days - 1) * DAY_MS
    const revenue = this.db
      .prepare(
        `SELECT date(i.settled_at / 1000, 'unixepoch') AS day, i.product_id, p.slug AS product_slug,
                coalesce(i.listed_currency, 'SAT') AS currency,
                sum(coalesce(i.listed_value, i.amount_sats)) AS listed_value,
                sum(i.amount_sats) AS amount_sats, count(*) AS invoices
         FROM invoices i JOIN products p ON p.id = i.product_id
         WHERE i.status = 'settled' AND i.kind <> 'redeem' AND i.settled_at >= ? AND i.settled_at <= ?
         GROUP BY day, i.product_id, currency ORDER BY day, product_slug, currency`,
      )
      .all(from, now) as (AnalyticsView['revenue'][number] & { currency: Currency })[]
    const issued = this.db
      .prepare(
        `SELECT date(l.issued_at / 1000, 'unixepoch') AS day, l.product_id, p.slug AS product_slug, count(*) AS count
         FROM licenses l JOIN products p ON p.id = l.product_id
         WHERE l.issued_at >= ? AND l.issued_at <= ?
         GROUP BY day, l.product_id ORDER BY day, product_slug`,
      )
      .all(from, now) as AnalyticsView['licenses_issued']
    const activeMachines = this.db
      .prepare(
        `SELECT count(*) FROM machines m JOIN licenses l ON l.id = m.license_id WHERE m.status = 'active' AND l.status = 'active'`,
      )
      .pluck()
      .get() as number
    const activeLicenses = this.db
      .prepare(
        `SELECT count(*) FROM licenses WHERE status = 'active' AND (expires_at IS NULL OR expires_at + grace_period_days * ${DAY_MS} > ?)`,
      )
      .pluck()
      .get(now) as number
    return {
      from_day: day(from),
      to_day: day(now),
      revenue,
      licenses_issued: issued,
      active_machines: activeMachines,
      active_licenses: activeLicenses,
      totals: {
        amount_sats: revenue.reduce((s, r) => s + r.amount_sats, 0),
        licenses_issued: issued.reduce((s, r) => s + r.count, 0),
        invoices_settled: revenue.reduce((s, r) => s + r.invoices, 0),
      },
    }
  }
}
