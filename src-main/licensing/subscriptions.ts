/**
 * Subscriptions (spec 001 §2.5): a recurring tier's license and its billing record. Created at the
 * settlement of the purchase (in its transaction), extended when a renewal invoice settles, ended
 * by a cancel (buyer or operator) or by the lapse sweep. The renewal worker (renewals.ts) bills them.
 */
import { randomUUID } from 'node:crypto'
import type { z } from 'zod'
import type {
  SubscriptionFilter,
  SubscriptionStatus as StatusSchema,
  SubscriptionView as ViewSchema,
} from '../contract/licensing'
import { ApiError } from '../contract/errors'
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import type { AuditActor, AuditLog } from './audit'
import { effectivePrice, type PolicyRow, type ProductRow } from './productCatalog'
import { equals, immediate, matchAny, orderBy, whereAll, type LicensingDb, type SqlArg } from './db'
import { emitEvent } from './outboundEvents'
import type { InvoiceRow } from './invoices'
import type { Licenses } from './licenses'
import type { EventOutbox, SettleBranch } from './settlement'

export const DAY_MS = 86_400_000

export type SubscriptionStatus = z.infer<typeof StatusSchema>
export type SubscriptionView = z.infer<typeof ViewSchema>

/** A subscription row as stored (migrations 003, 006 and 011). */
export interface SubscriptionRow {
  id: string
  license_id: string
  policy_id: string
  status: SubscriptionStatus
  listed_currency: SubscriptionView['listed_currency']
  listed_value: number
  period_days: number
  /** When the worker next tries to bill; a failed try moves it out by the backoff. */
  next_renewal_at: number
  /** When the cycle being billed fell due: the end of the period paid for (or of the trial). */
  due_at: number
  last_renewal_attempt_at: number | null
  consecutive_failures: number
  failure_reason: string | null
  cancelled_at: number | null
  created_at: number
  updated_at: number
}

type ViewRow = SubscriptionRow & {
  product_slug: string
  product_name: string
  policy_slug: string
  policy_name: string
  buyer_email: string | null
}

/** A subscription list's filter; sort and order default to newest first. */
export type SubscriptionSearch = Omit<SubscriptionFilter, 'sort' | 'order'> &
  Partial<Pick<SubscriptionFilter, 'sort' | 'order'>>

const SUBSCRIPTION_SORT: Record<SubscriptionFilter['sort'], string> = {
  created_at: 's.created_at',
  next_renewal_at: 's.next_renewal_at',
  status: 's.status',
  buyer_email: 'l.buyer_email',
  product: 'p.name',
}

function subscriptionFilter(q: SubscriptionSearch): { where: string; args: SqlArg[] } {
  return whereAll([
    equals('s.status', q.status || undefined),
    matchAny(['s.id', 's.license_id', 'l.buyer_email', 'p.slug', 'p.name', 'pol.name'], q.q),
  ])
}

const subscriptionOrder = (q: SubscriptionSearch): string =>
  orderBy(SUBSCRIPTION_SORT, q.sort ?? 'created_at', q.order ?? 'desc', 's.id')

const VIEW_FROM = `
  FROM subscriptions s
  JOIN licenses l ON l.id = s.license_id
  JOIN products p ON p.id = l.product_id
  JOIN policies pol ON pol.id = s.policy_id`

const VIEW_SELECT = `
  SELECT s.*, p.slug AS product_slug, p.name AS product_name, pol.slug AS policy_slug, pol.name AS policy_name,
    l.buyer_email AS buyer_email ${VIEW_FROM}`

/** Whether a tier sells as a subscription. */
export const isRecurring = (policy: PolicyRow): boolean => policy.is_recurring === 1 && policy.renewal_period_days > 0

/** Whether a purchase starts a free trial (Keysat's rule): a recurring tier with trial days is sold free first. */
export const startsTrial = (policy: PolicyRow): boolean => isRecurring(policy) && policy.trial_days > 0

/** A settled purchase that was a trial: free, of a trial tier (a paid one predates free trials). */
const isTrialPurchase = (policy: PolicyRow, inv: InvoiceRow): boolean =>
  startsTrial(policy) && inv.kind === 'purchase' && inv.amount_sats === 0

/**
 * Ends a live subscription: no further charges, the license valid through the cycle already paid.
 * The one place a cancellation is written, audited and announced (`subscription.cancelled`),
 * whoever ends it: the buyer, the admin, or a move onto a one-off tier. Inside the caller's transaction.
 */
export function endSubscription(
  d: { db: LicensingDb; audit: AuditLog; outbox: EventOutbox },
  sub: Pick<SubscriptionRow, 'id' | 'license_id' | 'status' | 'due_at'>,
  how: { actor: Extract<AuditActor, 'buyer' | 'admin' | 'system'>; reason: string | null; now: number },
): void {
  const { actor, reason, now } = how
  d.db
    .prepare("UPDATE subscriptions SET status = 'cancelled', cancelled_at = ?, updated_at = ? WHERE id = ?")
    .run(now, now, sub.id)
  d.audit.record({
    actor,
    action: 'subscription.cancel',
    targetType: 'subscription',
    targetId: sub.id,
    details: { license_id: sub.license_id, from_status: sub.status, reason },
  })
  emitEvent(
    d.outbox,
    'subscription.cancelled',
    {
      subscription_id: sub.id,
      license_id: sub.license_id,
      from_status: sub.status,
      actor,
      reason,
      cancelled_at: new Date(now).toISOString(),
      valid_through: new Date(sub.due_at).toISOString(),
    },
    now,
  )
}

export class Subscriptions {
  constructor(
    private readonly deps: {
      db: LicensingDb
      clock: Clock
      logger: Logger
      audit: AuditLog
      licenses: Licenses
      outbox: EventOutbox
    },
  ) {}

  /**
   * Issues the license of a settled recurring purchase and its subscription, inside the settle
   * transaction: the tier's listed price frozen as the renewal charge, cycle 1 tied to the purchase
   * invoice. A trial (the free purchase of a tier with trial days) runs to the trial end, flagged
   * as a trial, and the renewal worker bills the first paid cycle then; a paid purchase runs one
   * period (plus the trial days, for one opened before trials were free).
   */
  issueRecurring(
    inv: InvoiceRow,
    product: ProductRow,
    policy: PolicyRow,
    now: number,
  ): { licenseId: string; licenseKey: string } {
    const { db, licenses, outbox } = this.deps
    const trial = isTrialPurchase(policy, inv)
    const firstCycleDays = trial ? policy.trial_days : policy.renewal_period_days + policy.trial_days
    const { license, key } = licenses.issuing.issue({
      product,
      policy: { ...policy, duration_days: firstCycleDays, is_trial: trial ? 1 : policy.is_trial },
      source: 'purchase',
      invoiceId: inv.id,
      buyerEmail: inv.buyer_email,
      buyerNote: inv.buyer_note,
    })
    const price = effectivePrice(product, policy)
    const id = randomUUID()
    const nextRenewalAt = license.expires_at ?? now + firstCycleDays * DAY_MS
    db.prepare(
      `INSERT INTO subscriptions (id, license_id, policy_id, status, listed_currency, listed_value, period_days,
         next_renewal_at, due_at, created_at, updated_at)
       VALUES (?, ?, ?, 'active', ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      id,
      license.id,
      policy.id,
      price.currency,
      price.value,
      policy.renewal_period_days,
      nextRenewalAt,
      nextRenewalAt,
      now,
      now,
    )
    db.prepare(
      'INSERT INTO subscription_invoices (subscription_id, invoice_id, cycle_number, created_at) VALUES (?, ?, 1, ?)',
    ).run(id, inv.id, now)
    emitEvent(
      outbox,
      'subscription.created',
      {
        subscription_id: id,
        license_id: license.id,
        product_id: product.id,
        policy_id: policy.id,
        invoice_id: inv.id,
        listed_currency: price.currency,
        listed_value: price.value,
        period_days: policy.renewal_period_days,
        trial_days: policy.trial_days,
        next_renewal_at: new Date(nextRenewalAt).toISOString(),
        buyer_email: inv.buyer_email,
      },
      now,
    )
    return { licenseId: license.id, licenseKey: key }
  }

  /**
   * The settle branch for renewal invoices: the subscription is active again, failures reset, the
   * license extended by one period (and no longer a trial unless its tier is one). Settlement already makes a repeated settle a no-op (the invoice
   * is settled once, under the write lock), so the extension happens once.
   */
  renewalBranch(): SettleBranch {
    return {
      name: 'subscription_renewal',
      apply: (inv, now) => (inv.kind === 'renewal' ? this.settleRenewal(inv, now) : null),
    }
  }

  private settleRenewal(inv: InvoiceRow, now: number): { licenseId: string | null } {
    const { db, outbox, logger } = this.deps
    const cycle = db
      .prepare('SELECT subscription_id, cycle_number FROM subscription_invoices WHERE invoice_id = ?')
      .get(inv.id) as { subscription_id: string; cycle_number: number } | undefined
    const sub = cycle ? this.row(cycle.subscription_id) : undefined
    if (!cycle || !sub) {
      // A renewal invoice whose claim was rolled back (its checkout was never handed out).
      logger.warn('a renewal invoice without a cycle settled; no extension', { invoice: inv.id })
      return { licenseId: null }
    }
    const license = db.prepare('SELECT expires_at FROM licenses WHERE id = ?').get(sub.license_id) as
      { expires_at: number | null } | undefined
    const paidThrough = license?.expires_at ?? now
    const expiresAt = paidThrough + sub.period_days * DAY_MS
    db.prepare(
      `UPDATE licenses SET expires_at = ?, is_trial = (SELECT is_trial FROM policies WHERE id = ?), updated_at = ?
       WHERE id = ?`,
    ).run(expiresAt, sub.policy_id, now, sub.license_id)
    // A cancelled subscription stays cancelled: the payment only extends the license it was for.
    const status: SubscriptionStatus = sub.status === 'cancelled' ? 'cancelled' : 'active'
    const nextRenewalAt = Math.max(sub.next_renewal_at, expiresAt)
    db.prepare(
      `UPDATE subscriptions SET status = ?, consecutive_failures = 0, failure_reason = NULL, next_renewal_at = ?,
         due_at = ?, updated_at = ? WHERE id = ?`,
    ).run(status, nextRenewalAt, nextRenewalAt, now, sub.id)
    emitEvent(
      outbox,
      'subscription.renewed',
      {
        subscription_id: sub.id,
        license_id: sub.license_id,
        invoice_id: inv.id,
        cycle_number: cycle.cycle_number,
        status,
        expires_at: new Date(expiresAt).toISOString(),
        next_renewal_at: new Date(nextRenewalAt).toISOString(),
      },
      now,
    )
    return { licenseId: sub.license_id }
  }

  row(id: string): SubscriptionRow | undefined {
    return this.deps.db.prepare('SELECT * FROM subscriptions WHERE id = ?').get(id) as SubscriptionRow | undefined
  }

  view(id: string): SubscriptionView {
    const r = this.deps.db.prepare(`${VIEW_SELECT} WHERE s.id = ?`).get(id) as ViewRow | undefined
    if (!r) throw new ApiError('not_found', 'no such subscription')
    return this.toView(r)
  }

  /** The license's subscription, for the buyer pages; null for a license without one. */
  forLicense(licenseId: string): SubscriptionView | null {
    const r = this.deps.db.prepare('SELECT id FROM subscriptions WHERE license_id = ?').get(licenseId) as
      { id: string } | undefined
    return r ? this.view(r.id) : null
  }

  list(q: SubscriptionSearch & { limit: number; offset?: number }): {
    subscriptions: SubscriptionView[]
    total: number
  } {
    const { where, args } = subscriptionFilter(q)
    const total = (this.deps.db.prepare(`SELECT count(*) AS n ${VIEW_FROM} ${where}`).get(...args) as { n: number }).n
    const rows = this.deps.db
      .prepare(`${VIEW_SELECT} ${where} ${subscriptionOrder(q)} LIMIT ? OFFSET ?`)
      .all(...args, q.limit, q.offset ?? 0) as ViewRow[]
    return { subscriptions: rows.map((r) => this.toView(r)), total }
  }

  /** Every subscription matching a filter, in its sort order, read lazily (CSV export). */
  *matching(q: SubscriptionSearch, max: number): Generator<SubscriptionView> {
    const { where, args } = subscriptionFilter(q)
    const stmt = this.deps.db.prepare(`${VIEW_SELECT} ${where} ${subscriptionOrder(q)} LIMIT ?`)
    for (const r of stmt.iterate(...args, max) as Iterable<ViewRow>) yield this.toView(r)
  }

  private toView(r: ViewRow): SubscriptionView {
    const cycles = this.deps.db
      .prepare(
        `SELECT si.cycle_number, si.invoice_id, i.status, si.created_at
         FROM subscription_invoices si JOIN invoices i ON i.id = si.invoice_id
         WHERE si.subscription_id = ? ORDER BY si.cycle_number`,
      )
      .all(r.id) as SubscriptionView['cycles']
    return {
      id: r.id,
      license_id: r.license_id,
      product_slug: r.product_slug,
      product_name: r.product_name,
      policy_id: r.policy_id,
      policy_slug: r.policy_slug,
      policy_name: r.policy_name,
      buyer_email: r.buyer_email,
      status: r.status,
      listed_currency: r.listed_currency,
      listed_value: r.listed_value,
      period_days: r.period_days,
      next_renewal_at: r.next_renewal_at,
      due_at: r.due_at,
      last_renewal_attempt_at: r.last_renewal_attempt_at,
      consecutive_failures: r.consecutive_failures,
      failure_reason: r.failure_reason,
      cancelled_at: r.cancelled_at,
      created_at: r.created_at,
      cycles,
    }
  }

  /**
   * The buyer's cancel: a signed key of an active license (401 for anything else, revoked and
   * suspended included, as Keysat), 404 when the license has no subscription.
   */
  cancelByKey(keyText: string): {
    ok: true
    subscription_id: string
    status: SubscriptionStatus
    already: SubscriptionStatus | null
  } {
    const { license } = this.deps.licenses.keys.authenticateActive(keyText)
    const sub = this.deps.db.prepare('SELECT id FROM subscriptions WHERE license_id = ?').get(license.id) as
      { id: string } | undefined
    if (!sub) throw new ApiError('not_found', 'this license has no subscription')
    return { ...this.cancel(sub.id, 'buyer', null), subscription_id: sub.id }
  }

  /**
   * Stops further charges; the license stays valid through the cycle already paid. Idempotent:
   * a subscription already cancelled or lapsed answers `already` with its status.
   */
  cancel(
    id: string,
    actor: Extract<AuditActor, 'buyer' | 'admin'>,
    reason: string | null,
  ): { ok: true; status: SubscriptionStatus; already: SubscriptionStatus | null } {
    const { db, clock, audit, outbox } = this.deps
    return immediate(db, () => {
      const sub = this.row(id)
      if (!sub) throw new ApiError('not_found', 'no such subscription')
      if (sub.status === 'cancelled' || sub.status === 'lapsed')
        return { ok: true as const, status: sub.status, already: sub.status }
      endSubscription({ db, audit, outbox }, sub, { actor, reason, now: clock.now() })
      return { ok: true as const, status: 'cancelled' as const, already: null }
    })
  }

  /**
   * Past-due subscriptions whose due date (the end of the period paid for, which neither a claimed
   * but unpaid cycle nor a renewal backoff moves) plus the tier's current grace period has passed
   * become `lapsed`: a grace changed on the tier after the sale applies. Returns how many.
   */
  lapseSweep(now: number): number {
    const { db, outbox, audit } = this.deps
    return immediate(db, () => {
      const due = db
        .prepare(
          `SELECT s.id, s.license_id, s.due_at, pol.grace_period_days
           FROM subscriptions s JOIN policies pol ON pol.id = s.policy_id
           WHERE s.status = 'past_due' AND s.due_at + pol.grace_period_days * ${DAY_MS} <= ?`,
        )
        .all(now) as { id: string; license_id: string; due_at: number; grace_period_days: number }[]
      const lapse = db.prepare(
        "UPDATE subscriptions SET status = 'lapsed', updated_at = ? WHERE id = ? AND status = 'past_due'",
      )
      for (const s of due) {
        if (lapse.run(now, s.id).changes !== 1) continue
        audit.record({ actor: 'system', action: 'subscription.lapse', targetType: 'subscription', targetId: s.id })
        emitEvent(
          outbox,
          'subscription.lapsed',
          {
            subscription_id: s.id,
            license_id: s.license_id,
            expired_at: new Date(s.due_at).toISOString(),
            grace_period_days: s.grace_period_days,
          },
          now,
        )
      }
      return due.length
    })
  }
}
