/**
 * Applying a tier change: the license (and its live subscription) moved onto the target tier, and
 * the rows and views of tier_changes. Called inside the caller's transaction by the operator's
 * immediate change, the settle branch of a paid change and the deferred-downgrade worker.
 */
import type { z } from 'zod'
import type { Quote, TierChangeView } from '../contract/licensing'
import type { LicensingDb } from './db'
import { iso, parseStringList } from './json'
import type { LicensingServices } from './licensingServices'
import { effectivePrice, type PolicyRow, type ProductRow } from './productCatalog'
import type { EventOutbox } from './settlement'
import { endSubscription, type SubscriptionRow } from './subscriptions'

const DAY_MS = 86_400_000

export type TierChangeViewT = z.infer<typeof TierChangeView>

export interface ApplyDeps {
  readonly services: LicensingServices
  readonly outbox: EventOutbox
}

export interface TierChangeRow {
  id: string
  license_id: string
  from_policy_id: string
  to_policy_id: string
  direction: 'upgrade' | 'downgrade'
  listed_currency: Quote['listed_currency']
  proration_charge_value: number
  invoice_id: string | null
  effective_at: number
  applied_at: number | null
  actor: 'buyer' | 'admin'
  reason: string
  created_at: number
}

/** The license's subscription that still bills (active or past due), if any. */
export function liveSubscription(db: LicensingDb, licenseId: string): SubscriptionRow | null {
  const s = db
    .prepare("SELECT * FROM subscriptions WHERE license_id = ? AND status IN ('active', 'past_due')")
    .get(licenseId) as SubscriptionRow | undefined
  return s ?? null
}

/**
 * Moves the license (and its live subscription) onto the target tier; inside the caller's
 * transaction. A license already on the target is left alone (a redelivered settle).
 */
export function applyTierChange(d: ApplyDeps, row: TierChangeRow, now: number, actor: 'admin' | 'system'): void {
  const { catalog } = d.services
  const license = d.services.licenses.lookup.row(row.license_id)
  const to = catalog.policyRow(row.to_policy_id)
  const product = license ? catalog.productRow(license.product_id) : undefined
  if (!license || !to || !product) throw new Error(`tier change ${row.id} names a missing license or tier`)
  d.services.db.prepare('UPDATE tier_changes SET applied_at = ? WHERE id = ?').run(now, row.id)
  if (license.policy_id === to.id) return
  const sub = liveSubscription(d.services.db, license.id)
  const recurring = to.is_recurring === 1 && to.renewal_period_days > 0
  // A recurring tier keeps the paid-through date (the cycle end); a one-off tier starts its own term.
  const expiresAt = recurring ? license.expires_at : to.duration_days > 0 ? now + to.duration_days * DAY_MS : null
  d.services.db
    .prepare(
      `UPDATE licenses SET policy_id = ?, entitlements = ?, max_machines = ?, grace_period_days = ?, expires_at = ?,
           updated_at = ? WHERE id = ?`,
    )
    .run(
      to.id,
      JSON.stringify(parseStringList(to.entitlements)),
      to.max_machines,
      to.grace_period_days,
      expiresAt,
      now,
      license.id,
    )
  if (sub) moveSubscription(d, sub, product, to, recurring, now, actor)
  d.services.audit.record({
    actor,
    action: 'license.tier_change',
    targetType: 'license',
    targetId: license.id,
    details: {
      tier_change_id: row.id,
      from: license.policy_id,
      to: to.id,
      direction: row.direction,
      invoice_id: row.invoice_id,
    },
  })
  d.outbox.enqueue(
    'license.tier_changed',
    {
      license_id: license.id,
      product_id: license.product_id,
      tier_change_id: row.id,
      from_policy_id: license.policy_id,
      to_policy_id: to.id,
      to_policy_slug: to.slug,
      direction: row.direction,
      actor: row.actor,
      listed_currency: row.listed_currency,
      proration_charge_value: row.proration_charge_value,
      invoice_id: row.invoice_id,
      entitlements: parseStringList(to.entitlements),
      expires_at: expiresAt === null ? null : iso(expiresAt),
      buyer_email: license.buyer_email,
    },
    now,
  )
}

/** A recurring target re-prices the subscription from the next renewal on; a one-off target ends it. */
function moveSubscription(
  d: ApplyDeps,
  sub: SubscriptionRow,
  product: ProductRow,
  to: PolicyRow,
  recurring: boolean,
  now: number,
  actor: 'admin' | 'system',
): void {
  if (!recurring) {
    const { db, audit } = d.services
    const reason = `moved to the one-off tier ${to.slug}`
    endSubscription({ db, audit, outbox: d.outbox }, sub, { actor, reason, now })
    return
  }
  const listed = effectivePrice(product, to)
  d.services.db
    .prepare(
      `UPDATE subscriptions SET policy_id = ?, listed_currency = ?, listed_value = ?, period_days = ?, updated_at = ?
         WHERE id = ?`,
    )
    .run(to.id, listed.currency, listed.value, to.renewal_period_days, now, sub.id)
}

export function tierChangeRow(db: LicensingDb, id: string): TierChangeRow {
  return db.prepare('SELECT * FROM tier_changes WHERE id = ?').get(id) as TierChangeRow
}

export function tierChangeView(db: LicensingDb, id: string): TierChangeViewT {
  const r = db
    .prepare(
      `SELECT t.*, f.slug AS from_slug, p.slug AS to_slug FROM tier_changes t
         LEFT JOIN policies f ON f.id = t.from_policy_id JOIN policies p ON p.id = t.to_policy_id WHERE t.id = ?`,
    )
    .get(id) as TierChangeRow & { from_slug: string | null; to_slug: string }
  return {
    id: r.id,
    license_id: r.license_id,
    from_policy_slug: r.from_slug,
    to_policy_slug: r.to_slug,
    direction: r.direction,
    listed_currency: r.listed_currency,
    proration_charge_value: r.proration_charge_value,
    invoice_id: r.invoice_id,
    effective_at: r.effective_at,
    applied_at: r.applied_at,
    actor: r.actor,
    reason: r.reason,
    created_at: r.created_at,
  }
}
