import { Counter, Gauge, type Registry } from 'prom-client'
import type { Clock } from '../lib/clock'
import type { AccessTierTotals, LicensingDb } from '../licensing/types'

/**
 * Shop metrics read from the licensing database at scrape time (one grouped query each), and
 * validations counted as they are answered. Counters read from SQL are totals the database keeps
 * (settled invoices never go back), so they are set, not accumulated.
 */
export function licensingMetrics(
  registers: Registry[],
  db: () => LicensingDb | null,
  clock: Clock,
): { countValidation(ok: boolean, reason: string | undefined): void } {
  const rows = <T>(sql: string, ...args: unknown[]): T[] => {
    const d = db()
    return d ? (d.prepare(sql).all(...args) as T[]) : []
  }
  const fromSql = <T extends Record<string, unknown>>(
    metric: Counter<string> | Gauge<string>,
    query: () => T[],
    labels: (r: T) => Record<string, string>,
    value: (r: T) => number,
  ): void => {
    metric.reset()
    for (const r of query()) metric.inc(labels(r), value(r))
  }
  type Sales = { currency: string; n: number; sats: number }
  const settled = (): Sales[] =>
    rows<Sales>(
      `SELECT COALESCE(listed_currency, 'SAT') AS currency, COUNT(*) AS n, COALESCE(SUM(amount_sats), 0) AS sats
       FROM invoices WHERE status = 'settled' AND kind <> 'redeem' GROUP BY 1`,
    )
  new Counter({
    name: 'tandem_licensing_sales_total',
    help: 'Settled paid invoices (purchases, renewals, upgrades) by listed currency',
    labelNames: ['currency'],
    registers,
    collect() {
      fromSql(
        this,
        settled,
        (r) => ({ currency: r.currency }),
        (r) => r.n,
      )
    },
  })
  new Counter({
    name: 'tandem_licensing_revenue_sats_total',
    help: 'Sats received on settled invoices, by the currency the price was listed in',
    labelNames: ['currency'],
    registers,
    collect() {
      fromSql(
        this,
        settled,
        (r) => ({ currency: r.currency }),
        (r) => r.sats,
      )
    },
  })
  type ByStatus = { status: string; n: number }
  new Gauge({
    name: 'tandem_licensing_licenses',
    help: 'Licenses by status (active past its expiry counts as expired)',
    labelNames: ['status'],
    registers,
    collect() {
      fromSql(
        this,
        () =>
          rows<ByStatus>(
            `SELECT CASE WHEN status = 'active' AND expires_at IS NOT NULL AND expires_at < ? THEN 'expired'
               ELSE status END AS status, COUNT(*) AS n FROM licenses GROUP BY 1`,
            clock.now(),
          ),
        (r) => ({ status: r.status }),
        (r) => r.n,
      )
    },
  })
  // Counts per status column value, labelled by `label`.
  const byStatus = (name: string, help: string, label: string, table: 'subscriptions' | 'webhook_deliveries') =>
    new Gauge({
      name,
      help,
      labelNames: [label],
      registers,
      collect() {
        const query = () => rows<ByStatus>(`SELECT status, COUNT(*) AS n FROM ${table} GROUP BY 1`)
        fromSql(
          this,
          query,
          (r) => ({ [label]: r.status }),
          (r) => r.n,
        )
      },
    })
  byStatus('tandem_licensing_subscriptions', 'Subscriptions by status', 'status', 'subscriptions')
  byStatus(
    'tandem_licensing_webhook_deliveries',
    'Outbound webhook deliveries by outcome (pending, delivered, failed)',
    'outcome',
    'webhook_deliveries',
  )
  return validationCounter(registers)
}

function validationCounter(registers: Registry[]): { countValidation(ok: boolean, reason: string | undefined): void } {
  const validations = new Counter({
    name: 'tandem_licensing_validations_total',
    help: 'License validations answered, by result (valid, or the reason it was not)',
    labelNames: ['result'],
    registers,
  })
  return {
    countValidation(ok, reason) {
      // The reason is one of the API's fixed codes; anything else is folded so labels stay few.
      const result = ok ? 'valid' : reason && /^[a-z_]{1,40}$/.test(reason) ? reason : 'other'
      validations.inc({ result })
    },
  }
}

type AccessFigure = Exclude<keyof AccessTierTotals, 'product' | 'tier'>

/** Each tier figure's gauge, named `tandem_access_<figure>`. */
const ACCESS_GAUGES: Record<AccessFigure, string> = {
  tokens_sold: "Tokens the standing access licenses may use this period (their tier's quota plus top-ups), by tier",
  tokens_used: "Tokens the access licenses' gateway keys used this period, by tier",
  audio_seconds_sold:
    "Audio seconds the standing access licenses may use this period (their tier's audio minutes × 60), by tier",
  audio_seconds_used:
    "Audio seconds (transcribed or synthesized) the access licenses' gateway keys used this period, by tier",
  revenue_sats: "Sats paid for the access licenses' current periods, by tier",
  licenses: 'Standing access licenses, by tier',
}

/**
 * The access licenses' current periods by product and tier (never by buyer), as gauges: tokens sold
 * (quotas plus top-ups), tokens used, audio seconds sold and used, revenue and licenses. One read
 * of the licenses per scrape, shared by the gauges.
 */
export function accessMetrics(registers: Registry[], access: () => readonly AccessTierTotals[]): void {
  let held: readonly AccessTierTotals[] | null = null
  const tiers = (): readonly AccessTierTotals[] => {
    if (held === null) {
      held = access()
      setImmediate(() => (held = null))
    }
    return held
  }
  for (const [field, help] of Object.entries(ACCESS_GAUGES) as [AccessFigure, string][])
    new Gauge({
      name: `tandem_access_${field}`,
      help,
      labelNames: ['product', 'tier'],
      registers,
      collect() {
        this.reset()
        for (const t of tiers()) this.set({ product: t.product, tier: t.tier }, t[field])
      },
    })
}
