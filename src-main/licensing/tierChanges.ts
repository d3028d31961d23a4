/**
 * Tier changes (spec 001 §2.6, §4.1, §4.3): the buyer's quote and paid upgrade, the operator's
 * change-tier (now without payment, with an invoice to forward, or a recurring downgrade deferred
 * to the cycle end), the history, and the settle branch that applies a paid change.
 *
 * Amounts are always recomputed here from the catalog and the license's subscription; a client
 * never supplies one. A change keeps the license id and its signed key: /v1/validate reads the
 * entitlements from the database, so the new ones show at once.
 *
 * The tier_changes `direction` CHECK knows only upgrade/downgrade: an operator's sideways move
 * (same rank, or out of the ladder at no lower price) is recorded as 'upgrade' with its charge.
 */
import { randomUUID } from 'node:crypto'
import type { z } from 'zod'
import type { Quote, UpgradeInput, UpgradeQuote, UpgradeStarted } from '../contract/licensing'
import { ApiError } from '../contract/errors'
import { effectivePrice, type PolicyRow, type ProductRow } from './productCatalog'
import { immediate } from './db'
import type { InvoiceRow } from './invoices'
import { iso } from './json'
import type { LicenseRow } from './licenses'
import type { LicenseChargeDeps } from './purchase'
import type { SettleBranch } from './settlement'
import type { SubscriptionRow } from './subscriptions'
import {
  applyTierChange,
  liveSubscription,
  tierChangeRow,
  tierChangeView,
  type TierChangeRow,
  type TierChangeViewT,
} from './tierChangeApply'

export type { TierChangeViewT } from './tierChangeApply'

const DAY_MS = 86_400_000

type Direction = 'upgrade' | 'downgrade'
type Actor = 'buyer' | 'admin'

/** Everything a change is computed from: the license, its tiers, its live subscription. */
interface Situation {
  license: LicenseRow
  product: ProductRow
  from: PolicyRow
  to: PolicyRow
  subscription: SubscriptionRow | null
}

/** A priced change (listed currency = the target tier's). */
interface Priced {
  direction: Direction
  charge: number
  /** True when the charge is a share of the current cycle (a live subscription moving to a recurring tier). */
  recurring: boolean
  effectiveAt: number
  nextRenewalValue: number | null
  nextRenewalAt: number | null
}

/**
 * The share of a price difference still owed for the rest of a cycle, rounded up so the seller is
 * never undercharged; each tier's price is taken per day of its own period.
 */
export function proratedCharge(a: {
  fromValue: number
  fromPeriodDays: number
  toValue: number
  toPeriodDays: number
  now: number
  cycleEnd: number
}): number {
  const remaining = BigInt(Math.max(0, a.cycleEnd - a.now))
  // Exact integer arithmetic: (to/toPeriod − from/fromPeriod) × remaining, over a common denominator.
  const perDayDiff = BigInt(a.toValue) * BigInt(a.fromPeriodDays) - BigInt(a.fromValue) * BigInt(a.toPeriodDays)
  if (perDayDiff <= 0n || remaining === 0n) return 0
  const num = perDayDiff * remaining
  const den = BigInt(a.fromPeriodDays) * BigInt(a.toPeriodDays) * BigInt(DAY_MS)
  return Number((num + den - 1n) / den)
}

export class TierChanges {
  /**
   * Licenses whose change invoice is being opened at the provider right now. A second change of
   * the same license meanwhile is refused (409), so two concurrent upgrades cannot both open and
   * record a provider invoice; entries live only as long as one provider call.
   */
  private readonly opening = new Set<string>()

  constructor(private readonly deps: LicenseChargeDeps) {}

  private get db() {
    return this.deps.services.db
  }

  private now(): number {
    return this.deps.services.deps.clock.now()
  }

  // ---- reading the situation ----

  private situation(license: LicenseRow, targetSlug: string, actor: Actor): Situation {
    const { catalog } = this.deps.services
    const product = catalog.productRow(license.product_id)
    const from = license.policy_id ? catalog.policyRow(license.policy_id) : undefined
    if (!product || !from) throw new ApiError('conflict', 'this license has no tier to change from')
    const to = catalog.policyBySlug(product.id, targetSlug)
    // Buyers see only active public tiers; the operator may use any active one.
    if (!to || to.active !== 1 || (actor === 'buyer' && to.public !== 1))
      throw new ApiError('not_found', `product ${product.slug} has no tier ${targetSlug}`)
    if (to.id === from.id) throw new ApiError('bad_input', `the license is already on tier ${to.slug}`)
    return { license, product, from, to, subscription: liveSubscription(this.db, license.id) }
  }

  /** The buyer's rule: both tiers on the ladder, the target different in rank. */
  private buyerDirection(s: Situation): Direction {
    if (s.from.tier_rank === null || s.to.tier_rank === null)
      throw new ApiError('bad_input', `tier ${s.to.slug} is not on this product's upgrade ladder`)
    if (s.to.tier_rank === s.from.tier_rank)
      throw new ApiError('bad_input', `tier ${s.to.slug} does not rank above the current tier`)
    return s.to.tier_rank > s.from.tier_rank ? 'upgrade' : 'downgrade'
  }

  /** The operator's rule: rank when both are ranked, else price; a sideways move counts as 'upgrade'. */
  private async adminDirection(s: Situation): Promise<Direction> {
    if (s.from.tier_rank !== null && s.to.tier_rank !== null)
      return s.to.tier_rank < s.from.tier_rank ? 'downgrade' : 'upgrade'
    const current = await this.currentValueIn(s, effectivePrice(s.product, s.to).currency)
    return effectivePrice(s.product, s.to).value < current ? 'downgrade' : 'upgrade'
  }

  /** What the license pays now, in `currency`: the subscription's snapshot, else the current tier's listed price. */
  private async currentValueIn(s: Situation, currency: Quote['listed_currency']): Promise<number> {
    const listed = s.subscription
      ? { currency: s.subscription.listed_currency, value: s.subscription.listed_value }
      : effectivePrice(s.product, s.from)
    return (await this.deps.services.pricing.convert(listed.value, listed.currency, currency, 'down')).value
  }

  private async price(s: Situation, direction: Direction): Promise<Priced> {
    const now = this.now()
    const target = effectivePrice(s.product, s.to)
    const current = await this.currentValueIn(s, target.currency)
    const sub = s.subscription
    const recurring = sub !== null && s.to.is_recurring === 1 && s.to.renewal_period_days > 0
    if (!recurring) {
      return {
        direction,
        charge: direction === 'upgrade' ? Math.max(0, target.value - current) : 0,
        recurring: false,
        effectiveAt: now,
        nextRenewalValue: null,
        nextRenewalAt: null,
      }
    }
    const next = { nextRenewalValue: target.value, nextRenewalAt: sub.next_renewal_at }
    // The paid cycle ends at due_at; next_renewal_at moves with a failed renewal's backoff.
    if (direction === 'downgrade') return { direction, charge: 0, recurring: true, effectiveAt: sub.due_at, ...next }
    const charge = proratedCharge({
      fromValue: current,
      fromPeriodDays: sub.period_days,
      toValue: target.value,
      toPeriodDays: s.to.renewal_period_days,
      now,
      cycleEnd: sub.due_at,
    })
    return { direction, charge, recurring: true, effectiveAt: now, ...next }
  }

  // ---- buyer ----

  /**
   * `POST /v1/upgrade-quote`: read-only. The key is checked before the tier is looked up; a
   * revoked or suspended license's key is refused like any bad key.
   */
  async quote(input: { license_key: string; target_policy_slug: string }): Promise<z.infer<typeof UpgradeQuote>> {
    const { license } = this.deps.services.licenses.keys.authenticateActive(input.license_key)
    const s = this.situation(license, input.target_policy_slug, 'buyer')
    const priced = await this.price(s, this.buyerDirection(s))
    const currency = effectivePrice(s.product, s.to).currency
    const sats = await this.deps.services.pricing.convert(priced.charge, currency, 'SAT', 'up')
    const deferred = priced.direction === 'downgrade' && priced.recurring
    return {
      ok: true,
      license_id: license.id,
      from_policy_id: s.from.id,
      from_policy_slug: s.from.slug,
      to_policy_id: s.to.id,
      to_policy_slug: s.to.slug,
      direction: priced.direction,
      listed_currency: currency,
      proration_charge_value: priced.charge,
      amount_sats: sats.value,
      // Keysat's words: "immediate" (on payment), or the cycle end a recurring downgrade waits for.
      effective_at: deferred ? iso(priced.effectiveAt) : 'immediate',
      next_renewal_charge: priced.nextRenewalValue,
      next_renewal_period_days: priced.nextRenewalValue === null ? null : s.to.renewal_period_days,
      next_renewal_value: priced.nextRenewalValue,
      next_renewal_at: priced.nextRenewalAt === null ? null : iso(priced.nextRenewalAt),
    }
  }

  /** `POST /v1/upgrade`: recomputes the quote, opens an invoice and a pending change; the license waits for payment. */
  async upgrade(input: UpgradeInput, signal?: AbortSignal): Promise<z.infer<typeof UpgradeStarted>> {
    const { license } = this.deps.services.licenses.keys.authenticateActive(input.license_key)
    const s = this.situation(license, input.target_policy_slug, 'buyer')
    if (input.redirect_url) this.deps.purchases.assertRedirect(input.redirect_url, s.product.return_url_prefix)
    const direction = this.buyerDirection(s)
    if (direction === 'downgrade')
      throw new ApiError('bad_input', 'a downgrade is admin-only: ask the seller to change the tier')
    const priced = await this.price(s, direction)
    if (priced.charge === 0)
      throw new ApiError('bad_input', 'this change costs nothing to pay for: it is admin-only, ask the seller')
    const opened = await this.openChangeInvoice(
      s,
      priced,
      { actor: 'buyer', reason: '', redirectUrl: input.redirect_url },
      signal,
    )
    return {
      ok: true,
      invoice_id: opened.invoiceId,
      provider_invoice_id: opened.providerInvoiceId,
      checkout_url: opened.checkoutUrl,
      amount_sats: opened.amountSats,
      proration_charge_value: priced.charge,
      listed_currency: opened.currency,
      tier_change_id: opened.tierChangeId,
      from_policy_slug: s.from.slug,
      to_policy_slug: s.to.slug,
      poll_url: `${this.deps.publicUrl()}/v1/purchase/${opened.invoiceId}`,
    }
  }

  /**
   * Spec 001 §4.3 rule 3: the invoice is created at the provider first, then the local invoice and
   * its pending tier_changes row are written in one transaction; a provider failure writes nothing.
   */
  private async openChangeInvoice(
    s: Situation,
    priced: Priced,
    by: { actor: Actor; reason: string; redirectUrl?: string },
    signal?: AbortSignal,
  ): Promise<{
    invoiceId: string
    providerInvoiceId: string
    checkoutUrl: string
    amountSats: number
    currency: Quote['listed_currency']
    tierChangeId: string
  }> {
    const licenseId = s.license.id
    if (this.opening.has(licenseId))
      throw new ApiError('conflict', 'a tier change of this license is being opened already; try again in a moment')
    this.opening.add(licenseId)
    try {
      const quote = await this.deps.services.pricing.charge(s.product, s.to, priced.charge)
      const tierChangeId = randomUUID()
      const { actor, reason } = by
      const opened = await this.deps.purchases.openAtProviderFirst(
        {
          kind: 'upgrade',
          quote,
          buyerEmail: s.license.buyer_email,
          buyerNote: null,
          redirectUrl: by.redirectUrl ?? null,
          alsoInTransaction: (invoiceId, now) =>
            this.insertChange({ id: tierChangeId, s, priced, invoiceId, actor, reason, effectiveAt: now, now }),
        },
        signal,
      )
      return { ...opened, amountSats: quote.amount_sats, currency: quote.listed_currency, tierChangeId }
    } finally {
      this.opening.delete(licenseId)
    }
  }

  private insertChange(a: {
    id: string
    s: Situation
    priced: Priced
    invoiceId: string | null
    actor: Actor
    reason: string
    effectiveAt: number
    now: number
  }): void {
    this.db
      .prepare(
        `INSERT INTO tier_changes (id, license_id, from_policy_id, to_policy_id, direction, listed_currency,
           proration_charge_value, invoice_id, effective_at, applied_at, actor, reason, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)`,
      )
      .run(
        a.id,
        a.s.license.id,
        a.s.from.id,
        a.s.to.id,
        a.priced.direction,
        effectivePrice(a.s.product, a.s.to).currency,
        a.priced.charge,
        a.invoiceId,
        a.effectiveAt,
        a.actor,
        a.reason,
        a.now,
      )
  }

  // ---- operator ----

  /**
   * `POST /v1/admin/licenses/:id/change-tier`. A recurring downgrade is recorded now and applied
   * at the cycle end (applyDueDowngrades); skip_payment or a zero charge applies at once; a
   * charge opens an invoice for the operator to forward.
   */
  async adminChange(
    input: { id: string; to_policy_slug: string; skip_payment: boolean; reason: string },
    signal?: AbortSignal,
  ): Promise<{ tier_change: TierChangeViewT; invoice_id: string | null; checkout_url: string | null }> {
    const license = this.deps.services.licenses.lookup.row(input.id)
    if (!license) throw new ApiError('not_found', `no license ${input.id}`)
    const s = this.situation(license, input.to_policy_slug, 'admin')
    const priced = await this.price(s, await this.adminDirection(s))
    const id = randomUUID()
    if (priced.direction === 'downgrade' && priced.recurring) {
      immediate(this.db, () => {
        const now = this.now()
        this.insertChange({
          id,
          s,
          priced,
          invoiceId: null,
          actor: 'admin',
          reason: input.reason,
          effectiveAt: priced.effectiveAt,
          now,
        })
        this.audit('admin', 'license.tier_change_scheduled', license.id, { tier_change_id: id, to: s.to.slug })
      })
      return { tier_change: tierChangeView(this.db, id), invoice_id: null, checkout_url: null }
    }
    if (input.skip_payment || priced.charge === 0) {
      const free = { ...priced, charge: 0 }
      immediate(this.db, () => {
        const now = this.now()
        this.insertChange({
          id,
          s,
          priced: free,
          invoiceId: null,
          actor: 'admin',
          reason: input.reason,
          effectiveAt: now,
          now,
        })
        applyTierChange(this.deps, tierChangeRow(this.db, id), now, 'admin')
      })
      this.deps.services.licenses.access.followTier(license.id)
      return { tier_change: tierChangeView(this.db, id), invoice_id: null, checkout_url: null }
    }
    const opened = await this.openChangeInvoice(s, priced, { actor: 'admin', reason: input.reason }, signal)
    return {
      tier_change: tierChangeView(this.db, opened.tierChangeId),
      invoice_id: opened.invoiceId,
      checkout_url: opened.checkoutUrl,
    }
  }

  /** `GET /v1/admin/licenses/:id/tier-changes`, newest first. */
  history(licenseId: string): { tier_changes: TierChangeViewT[] } {
    if (!this.deps.services.licenses.lookup.row(licenseId)) throw new ApiError('not_found', `no license ${licenseId}`)
    const ids = this.db
      .prepare('SELECT id FROM tier_changes WHERE license_id = ? ORDER BY created_at DESC, rowid DESC')
      .pluck()
      .all(licenseId) as string[]
    return { tier_changes: ids.map((id) => tierChangeView(this.db, id)) }
  }

  /**
   * Applies the deferred downgrades whose cycle has ended (the renewal worker calls this each
   * tick, before billing). Each is claimed and applied in its own transaction, so two workers
   * apply it once. Returns how many were applied.
   */
  applyDueDowngrades(now: number): number {
    const due = this.db
      .prepare(
        `SELECT id FROM tier_changes WHERE applied_at IS NULL AND invoice_id IS NULL AND effective_at <= ?
         ORDER BY effective_at, id`,
      )
      .pluck()
      .all(now) as string[]
    let applied = 0
    for (const id of due) {
      const licenseId = immediate(this.db, () => {
        const row = tierChangeRow(this.db, id)
        if (row.applied_at !== null) return null
        applyTierChange(this.deps, row, now, 'system')
        applied++
        return row.license_id
      })
      if (licenseId !== null) this.deps.services.licenses.access.followTier(licenseId)
    }
    return applied
  }

  // ---- applying ----

  /** The settle branch's work: a paid change applies now; null when the invoice is not a tier change. */
  applyForInvoice(invoice: InvoiceRow, now: number): { licenseId: string | null } | null {
    const row = this.db.prepare('SELECT * FROM tier_changes WHERE invoice_id = ?').get(invoice.id) as
      TierChangeRow | undefined
    if (!row) return null
    if (row.applied_at === null) applyTierChange(this.deps, row, now, 'system')
    return { licenseId: row.license_id }
  }

  // ---- rows and views ----

  private audit(actor: 'admin' | 'system', action: string, licenseId: string, details: Record<string, unknown>): void {
    this.deps.services.audit.record({ actor, action, targetType: 'license', targetId: licenseId, details })
  }
}

/** The tier-change check, registered FIRST on settlement (spec 001 §4.3 rule 4). */
export function tierChangeSettleBranch(tierChanges: TierChanges): SettleBranch {
  return { name: 'tier_change', apply: (invoice, now) => tierChanges.applyForInvoice(invoice, now) }
}
