/**
 * The operator's view of the access licenses (issue 45): each standing access license's tokens (and
 * audio seconds) this period against its quotas, and in total tokens sold vs used, revenue per model and the top
 * consumers; /metrics reads the same rows by tier.
 *
 * Revenue of a license's period is what was paid for it, in sats: a subscription's newest settled
 * cycle invoice (the cycle the period is), plus any purchase, upgrade or bought top-up invoice
 * settled inside the period; a one-off purchase counts in the period it was paid in, not in every
 * month after. It is split over the models in proportion to the tokens the license's key used on
 * each (whole sats, the remainder to the largest fractions); a period with no tokens used yet keeps
 * its revenue under no model.
 */
import type { AccessLicenseRow, AccessModelRevenue, AccessTotals } from '../contract/licensing'
import type { Clock } from '../lib/clock'
import { remainingOf, type AccessAllowance, type AccessKeys, type AccessModelTokens } from '../platform/accessKeys'
import type { AccessPeriod } from './accessPeriod'
import type { LicensingDb } from './db'
import { accessPeriodOf, STANDING_COLUMNS, standingOf, type StandingRow } from './licenseStanding'

export interface AccessReportDeps {
  db: LicensingDb
  clock: Clock
  /** The gateway's side: the licenses' keys' usage per model. Absent: no usage. */
  accessKeys?: AccessKeys
}

/** A standing access license this period, with its key's tokens per model. */
export interface AccessLicenseUse extends AccessLicenseRow {
  readonly models: readonly AccessModelTokens[]
}

/** One tier's access licenses this period, for /metrics (no buyer in it). */
export interface AccessTierTotals {
  readonly product: string
  readonly tier: string
  readonly licenses: number
  readonly tokens_sold: number
  readonly tokens_used: number
  /** Audio seconds the licenses with an audio quota may use this period. */
  readonly audio_seconds_sold: number
  readonly audio_seconds_used: number
  readonly revenue_sats: number
}

interface Candidate extends StandingRow {
  id: string
  product_slug: string
  tier_slug: string
  buyer_email: string | null
}

interface TopUp {
  license_id: string
  tokens: number
  created_at: number
}

interface Paid {
  license_id: string
  amount_sats: number
  settled_at: number
}

const TOP_CONSUMERS = 5

export class AccessReport {
  private readonly candidates
  private readonly topUpsSince
  private readonly cycleInvoices
  private readonly otherInvoices

  constructor(private readonly deps: AccessReportDeps) {
    // Active licenses on a tier that sells access, with what their standing is read from (the
    // same columns the gateway's check reads), so the report reads them all in one statement.
    this.candidates = deps.db.prepare(
      `SELECT l.id, pr.slug AS product_slug, p.slug AS tier_slug, l.buyer_email, ${STANDING_COLUMNS}
         FROM licenses l JOIN policies p ON p.id = l.policy_id JOIN products pr ON pr.id = l.product_id
         LEFT JOIN subscriptions s ON s.license_id = l.id
        WHERE l.status = 'active' AND p.access IS NOT NULL`,
    )
    this.topUpsSince = deps.db.prepare(
      'SELECT license_id, tokens, created_at FROM access_top_ups WHERE created_at >= ?',
    )
    // Each subscription's newest settled cycle invoice: what paid for the cycle its period is.
    this.cycleInvoices = deps.db.prepare(
      `SELECT license_id, amount_sats, settled_at FROM (
         SELECT s.license_id, i.amount_sats, i.settled_at,
                ROW_NUMBER() OVER (PARTITION BY s.id ORDER BY si.cycle_number DESC) AS n
           FROM subscriptions s JOIN subscription_invoices si ON si.subscription_id = s.id
           JOIN invoices i ON i.id = si.invoice_id
          WHERE i.status = 'settled')
        WHERE n = 1`,
    )
    // Purchases, upgrades and bought top-ups settled since `?` (cycle invoices are counted above).
    this.otherInvoices = deps.db.prepare(
      `SELECT x.license_id, i.amount_sats, i.settled_at FROM (
         SELECT id AS license_id, invoice_id FROM licenses WHERE invoice_id IS NOT NULL
         UNION ALL SELECT license_id, invoice_id FROM tier_changes WHERE invoice_id IS NOT NULL
         UNION ALL SELECT license_id, invoice_id FROM access_top_ups WHERE source = 'paid' AND invoice_id IS NOT NULL
       ) x JOIN invoices i ON i.id = x.invoice_id
        WHERE i.status = 'settled' AND i.kind <> 'redeem' AND i.settled_at >= ?
          AND i.id NOT IN (SELECT invoice_id FROM subscription_invoices)`,
    )
  }

  /**
   * Every standing access license this period, most tokens used first: a fixed number of
   * statements however many licenses (their rows, their top-ups, their usage, the invoices).
   */
  licenses(): AccessLicenseUse[] {
    const now = this.deps.clock.now()
    const candidates = this.candidates.all() as Candidate[]
    const topUps = this.topUpsOf(candidates, now)
    const standing: { c: Candidate; a: AccessAllowance }[] = []
    for (const c of candidates) {
      const checked = standingOf(c, now, (p) => topUpsIn(topUps.get(c.id), p))
      if (checked.refusal === null) standing.push({ c, a: checked.allowance })
    }
    if (standing.length === 0) return []
    const used = this.deps.accessKeys?.periodModels(
      standing.map((s) => ({ licenseId: s.c.id, periodStart: s.a.periodStart })),
    )
    const revenue = this.revenue(new Map(standing.map((s) => [s.c.id, { start: s.a.periodStart, end: s.a.resetsAt }])))
    return standing
      .map(({ c, a }): AccessLicenseUse => {
        const models = [...(used?.get(c.id) ?? [])].sort(
          (a, b) => b.tokens - a.tokens || a.model.localeCompare(b.model),
        )
        const spent = models.reduce((n, m) => n + m.tokens, 0)
        return {
          license_id: c.id,
          product_slug: c.product_slug,
          tier_slug: c.tier_slug,
          buyer_email: c.buyer_email,
          tokens_allowed: a.tokens,
          top_up_tokens: a.topUpTokens,
          tokens_used: spent,
          tokens_remaining: remainingOf(a.tokens, spent),
          audio_seconds_allowed: a.audioSeconds,
          audio_seconds_used: models.reduce((n, m) => n + m.audioSeconds, 0),
          revenue_sats: revenue.get(c.id) ?? 0,
          period_start: a.periodStart,
          resets_at: a.resetsAt,
          models,
        }
      })
      .sort((a, b) => b.tokens_used - a.tokens_used || a.license_id.localeCompare(b.license_id))
  }

  /** The admin's page: totals, revenue per model, top consumers, and `limit` licenses from `offset`. */
  report(q: { limit: number; offset: number }): AccessTotalsView & {
    total: number
    licenses: AccessLicenseRow[]
    top_consumers: AccessLicenseRow[]
  } {
    const all = this.licenses()
    const row = ({ models: _models, ...r }: AccessLicenseUse): AccessLicenseRow => r
    return {
      total: all.length,
      licenses: all.slice(q.offset, q.offset + q.limit).map(row),
      ...accessTotals(all),
      top_consumers: all
        .filter((l) => l.tokens_used > 0)
        .slice(0, TOP_CONSUMERS)
        .map(row),
    }
  }

  /** The same periods by product and tier. */
  byTier(): AccessTierTotals[] {
    return accessByTier(this.licenses())
  }

  /** The top-ups of the candidates since the earliest of their periods began, by license. */
  private topUpsOf(candidates: readonly Candidate[], now: number): Map<string, TopUp[]> {
    const out = new Map<string, TopUp[]>()
    if (candidates.length === 0) return out
    let since = Infinity
    for (const c of candidates) since = Math.min(since, accessPeriodOf(c, now).start)
    for (const t of this.topUpsSince.all(since) as TopUp[]) {
      const mine = out.get(t.license_id)
      if (mine) mine.push(t)
      else out.set(t.license_id, [t])
    }
    return out
  }

  /** Sats paid for each license's current period (see the file's note). */
  private revenue(periods: ReadonlyMap<string, { start: number; end: number }>): Map<string, number> {
    const out = new Map<string, number>()
    const add = (p: Paid) => out.set(p.license_id, (out.get(p.license_id) ?? 0) + p.amount_sats)
    for (const p of this.cycleInvoices.all() as Paid[]) if (periods.has(p.license_id)) add(p)
    let since = Infinity
    for (const p of periods.values()) since = Math.min(since, p.start)
    for (const p of this.otherInvoices.all(since) as Paid[]) {
      const period = periods.get(p.license_id)
      if (period && p.settled_at >= period.start && p.settled_at < period.end) add(p)
    }
    return out
  }
}

/** Tokens the top-ups added inside `period`. */
function topUpsIn(topUps: readonly TopUp[] | undefined, period: AccessPeriod): number {
  let n = 0
  for (const t of topUps ?? []) if (t.created_at >= period.start && t.created_at < period.end) n += t.tokens
  return n
}

export interface AccessTotalsView {
  totals: AccessTotals
  revenue: AccessModelRevenue[]
}

/** Totals and revenue per model over licenses' periods (most revenue first, then most tokens). */
export function accessTotals(licenses: readonly AccessLicenseUse[]): AccessTotalsView {
  const totals: AccessTotals = {
    licenses: 0,
    unlimited_licenses: 0,
    tokens_sold: 0,
    tokens_used: 0,
    audio_seconds_sold: 0,
    audio_seconds_used: 0,
    revenue_sats: 0,
  }
  const byModel = new Map<string | null, AccessModelRevenue>()
  const share = (model: string | null, tokens: number, requests: number, sats: number) => {
    const cur = byModel.get(model) ?? { model, tokens: 0, requests: 0, revenue_sats: 0 }
    byModel.set(model, {
      model,
      tokens: cur.tokens + tokens,
      requests: cur.requests + requests,
      revenue_sats: cur.revenue_sats + sats,
    })
  }
  for (const l of licenses) {
    totals.licenses++
    if (l.tokens_allowed === null) totals.unlimited_licenses++
    else totals.tokens_sold += l.tokens_allowed
    totals.tokens_used += l.tokens_used
    totals.audio_seconds_sold += l.audio_seconds_allowed ?? 0
    totals.audio_seconds_used += l.audio_seconds_used
    totals.revenue_sats += l.revenue_sats
    const split = splitSats(
      l.revenue_sats,
      l.models.map((m) => m.tokens),
    )
    l.models.forEach((m, i) => share(m.model, m.tokens, m.requests, split[i]!))
    if (l.tokens_used === 0 && l.revenue_sats > 0) share(null, 0, 0, l.revenue_sats)
  }
  const revenue = [...byModel.values()].sort(
    (a, b) => b.revenue_sats - a.revenue_sats || b.tokens - a.tokens || (a.model ?? '').localeCompare(b.model ?? ''),
  )
  return { totals, revenue }
}

/**
 * `sats` split in proportion to `weights`, in whole sats that add up to `sats` (the remainder goes
 * to the largest fractions, the first on a tie). All weights zero: nothing is split.
 */
export function splitSats(sats: number, weights: readonly number[]): number[] {
  const sum = weights.reduce((n, w) => n + w, 0)
  if (sum <= 0) return weights.map(() => 0)
  const exact = weights.map((w) => (sats * w) / sum)
  const out = exact.map(Math.floor)
  let left = sats - out.reduce((n, v) => n + v, 0)
  const order = exact.map((v, i) => ({ i, f: v - Math.floor(v) })).sort((a, b) => b.f - a.f || a.i - b.i)
  for (const { i } of order) {
    if (left <= 0) break
    out[i]!++
    left--
  }
  return out
}

/** Licenses' periods added up per product and tier (slug order). */
export function accessByTier(licenses: readonly AccessLicenseUse[]): AccessTierTotals[] {
  const tiers = new Map<string, AccessTierTotals>()
  for (const l of licenses) {
    const key = `${l.product_slug}\u0000${l.tier_slug}`
    const cur = tiers.get(key) ?? {
      product: l.product_slug,
      tier: l.tier_slug,
      licenses: 0,
      tokens_sold: 0,
      tokens_used: 0,
      audio_seconds_sold: 0,
      audio_seconds_used: 0,
      revenue_sats: 0,
    }
    tiers.set(key, {
      ...cur,
      licenses: cur.licenses + 1,
      tokens_sold: cur.tokens_sold + (l.tokens_allowed ?? 0),
      tokens_used: cur.tokens_used + l.tokens_used,
      audio_seconds_sold: cur.audio_seconds_sold + (l.audio_seconds_allowed ?? 0),
      audio_seconds_used: cur.audio_seconds_used + l.audio_seconds_used,
      revenue_sats: cur.revenue_sats + l.revenue_sats,
    })
  }
  return [...tiers.values()].sort((a, b) => a.product.localeCompare(b.product) || a.tier.localeCompare(b.tier))
}
