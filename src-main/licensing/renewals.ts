/**
 * The renewal worker (spec 001 §2.5): every minute on the injected clock it repairs claims a
 * crashed worker left behind, lapses past-due subscriptions, applies due tier downgrades, then
 * bills up to 25 due subscriptions, oldest due first.
 *
 * Two dates per subscription: `due_at`, when the cycle being billed fell due (the end of the period
 * paid for, or of the trial), and `next_renewal_at`, when the worker next tries. A failed invoice
 * creation moves only `next_renewal_at`, by its backoff; the next cycle and lapse (due_at plus the
 * tier's grace) count from `due_at`, so retrying never extends what the buyer gets.
 *
 * Claim: the renewal invoice row, its cycle row and the moved `next_renewal_at` are written in one
 * transaction, conditional on the subscription still being as it was read, so two ticks or two
 * daemons on one database bill a cycle once (UNIQUE (subscription_id, cycle_number) is the last
 * line of defence). The provider checkout is opened after that transaction and attached to the
 * invoice. A claim whose checkout never got attached (the worker died in between) is rolled back by
 * a later tick once it is STALE_CLAIM_MS old (the invoice closed as invalid, the cycle row removed)
 * and billed again: the buyer only ever sees one checkout per cycle.
 */
import type { Quote } from '../contract/licensing'
import { ApiError } from '../contract/errors'
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import { WriteOutage } from '../lib/writeOutage'
import type { Currency } from '../contract/licensing'
import { immediate, type LicensingDb } from './db'
import { emitEvent } from './outboundEvents'
import type { Pricing } from './pricing'
import type { Purchases } from './purchase'
import type { EventOutbox, Settlement } from './settlement'
import { DAY_MS, type SubscriptionRow, type Subscriptions } from './subscriptions'

export const RENEWAL_INTERVAL_MS = 60_000
export const RENEWAL_BATCH = 25
/** How far `next_renewal_at` moves after the 1st..5th consecutive failed invoice creation; the 5th stops renewals. */
export const RENEWAL_BACKOFF_MS = [5 * 60_000, 30 * 60_000, 2 * 3_600_000, 6 * 3_600_000, 12 * 3_600_000] as const
export const MAX_FAILURES = 5
/** A claim older than this without a checkout belongs to a worker that died mid-way. */
export const STALE_CLAIM_MS = 2 * 60_000

export interface RenewalReport {
  repaired: number
  lapsed: number
  downgrades: number
  claimed: number
  invoiced: number
  failed: number
}

type DueRow = SubscriptionRow & {
  product_id: string
  product_slug: string
  policy_slug: string
  buyer_email: string | null
}

/** Thrown inside the claim transaction when another tick got there first: rolls the claim back. */
class ClaimLost extends Error {}

export class RenewalWorker {
  private timer: NodeJS.Timeout | null = null
  /** A tick a full disk refuses is told once per outage, not once a tick. */
  private readonly outage: WriteOutage
  private running: Promise<unknown> | null = null

  constructor(
    private readonly deps: {
      db: LicensingDb
      clock: Clock
      logger: Logger
      subscriptions: Subscriptions
      purchases: Purchases
      pricing: Pricing
      settlement: Settlement
      outbox: EventOutbox
      /** L2's recurring downgrades applied at the cycle boundary, before the cycle is billed. */
      applyDueDowngrades?: (now: number) => number
      batch?: number
      intervalMs?: number
      /** DATA_DIR: a SQLite I/O error there counts as a full disk when it has no room. */
      dataDir?: string
    },
  ) {
    this.outage = new WriteOutage({
      logger: deps.logger,
      clock: deps.clock,
      dataDir: deps.dataDir,
      what: 'renewals',
      meanwhile: 'due renewals are billed by a later tick once there is room',
    })
  }

  async tick(): Promise<RenewalReport> {
    const { clock, subscriptions, logger } = this.deps
    const now = clock.now()
    const report: RenewalReport = { repaired: 0, lapsed: 0, downgrades: 0, claimed: 0, invoiced: 0, failed: 0 }
    report.repaired = this.repairStaleClaims(now)
    report.lapsed = subscriptions.lapseSweep(now)
    report.downgrades = this.deps.applyDueDowngrades?.(now) ?? 0
    for (const sub of this.due(now)) {
      const outcome = await this.renew(sub)
      if (outcome !== 'lost') report.claimed++
      if (outcome === 'invoiced') report.invoiced++
      if (outcome === 'failed') report.failed++
    }
    if (report.claimed + report.repaired + report.lapsed > 0) logger.info('renewals', { ...report })
    return report
  }

  /** Due, billable subscriptions (a backoff has moved next_renewal_at): no unpaid cycle open, not stopped; oldest due first. */
  private due(now: number): DueRow[] {
    return this.deps.db
      .prepare(
        `SELECT s.*, l.product_id AS product_id, p.slug AS product_slug, pol.slug AS policy_slug,
           l.buyer_email AS buyer_email
         FROM subscriptions s
         JOIN licenses l ON l.id = s.license_id
         JOIN products p ON p.id = l.product_id
         JOIN policies pol ON pol.id = s.policy_id
         WHERE s.status IN ('active', 'past_due') AND s.next_renewal_at <= ?
           AND s.consecutive_failures < ${MAX_FAILURES}
           AND NOT EXISTS (SELECT 1 FROM subscription_invoices si JOIN invoices i ON i.id = si.invoice_id
                           WHERE si.subscription_id = s.id AND i.status != 'settled')
         ORDER BY s.next_renewal_at, s.id
         LIMIT ?`,
      )
      .all(now, this.deps.batch ?? RENEWAL_BATCH) as DueRow[]
  }

  /** The renewal charge: SAT/BTC snapshots unchanged; fiat re-quoted at today's rate (audit fields kept). */
  private async quote(sub: DueRow): Promise<Quote> {
    const currency: Currency = sub.listed_currency
    const sats = await this.deps.pricing.convert(sub.listed_value, currency, 'SAT', 'up')
    return {
      product_id: sub.product_id,
      product_slug: sub.product_slug,
      policy_id: sub.policy_id,
      policy_slug: sub.policy_slug,
      listed_currency: currency,
      base_value: sub.listed_value,
      discount_code_id: null,
      discount_code: null,
      discount_value: 0,
      listed_value: sub.listed_value,
      amount_sats: sats.value,
      exchange_rate_centibps: sats.rate?.centibps ?? null,
      exchange_rate_source: sats.rate?.source ?? null,
      free: sub.listed_value === 0,
    }
  }

  private async renew(sub: DueRow): Promise<'invoiced' | 'failed' | 'lost'> {
    let invoiceId: string | null = null
    try {
      const quote = await this.quote(sub)
      const opened = await this.deps.purchases.openInvoice({
        kind: 'renewal',
        quote,
        buyerEmail: sub.buyer_email,
        buyerNote: null,
        redirectUrl: null,
        alsoInTransaction: (id, now) => {
          invoiceId = id
          this.claim(sub, id, now)
        },
      })
      this.announcePending(sub, opened.invoiceId, opened.checkoutUrl)
      return 'invoiced'
    } catch (err) {
      if (err instanceof ClaimLost) return 'lost'
      const reason = err instanceof ApiError ? err.message : 'invoice creation failed'
      this.deps.logger.warn('renewal invoice creation failed', { subscription: sub.id, error: reason })
      this.recordFailure(sub, invoiceId, reason)
      return 'failed'
    }
  }

  /**
   * Inside the invoice's transaction: the subscription must still be as read, then the next cycle
   * row. The cycle after this one is due a period after this one's due date, however late the try.
   */
  private claim(sub: DueRow, invoiceId: string, now: number): void {
    const { db } = this.deps
    const moved = db
      .prepare(
        `UPDATE subscriptions SET next_renewal_at = ?, last_renewal_attempt_at = ?, status = 'past_due', updated_at = ?
         WHERE id = ? AND next_renewal_at = ? AND status IN ('active', 'past_due') AND consecutive_failures = ?`,
      )
      .run(sub.due_at + sub.period_days * DAY_MS, now, now, sub.id, sub.next_renewal_at, sub.consecutive_failures)
    if (moved.changes !== 1) throw new ClaimLost()
    const last = db
      .prepare('SELECT coalesce(max(cycle_number), 0) AS n FROM subscription_invoices WHERE subscription_id = ?')
      .get(sub.id) as { n: number }
    db.prepare(
      'INSERT INTO subscription_invoices (subscription_id, invoice_id, cycle_number, created_at) VALUES (?, ?, ?, ?)',
    ).run(sub.id, invoiceId, last.n + 1, now)
  }

  private announcePending(sub: DueRow, invoiceId: string, checkoutUrl: string | null): void {
    const { db, clock, outbox } = this.deps
    immediate(db, () => {
      const cycle = db.prepare('SELECT cycle_number FROM subscription_invoices WHERE invoice_id = ?').get(invoiceId) as
        { cycle_number: number } | undefined
      // A zero charge settled at once (subscription.renewed says so); a rolled-back claim says nothing.
      if (!cycle || checkoutUrl === null) return
      const now = clock.now()
      db.prepare(
        'UPDATE subscriptions SET consecutive_failures = 0, failure_reason = NULL, updated_at = ? WHERE id = ?',
      ).run(now, sub.id)
      const inv = db.prepare('SELECT amount_sats, expires_at FROM invoices WHERE id = ?').get(invoiceId) as {
        amount_sats: number
        expires_at: number | null
      }
      emitEvent(
        outbox,
        'subscription.renewal_pending',
        {
          subscription_id: sub.id,
          license_id: sub.license_id,
          invoice_id: invoiceId,
          cycle_number: cycle.cycle_number,
          checkout_url: checkoutUrl,
          amount_sats: inv.amount_sats,
          listed_currency: sub.listed_currency,
          listed_value: sub.listed_value,
          due_at: new Date(sub.due_at).toISOString(),
          buyer_email: sub.buyer_email,
        },
        now,
      )
    })
  }

  /**
   * The provider refused (or none is connected): the claim is undone (the invoice is already
   * closed as invalid), the failure counted with its reason, and `next_renewal_at` moved out by the
   * backoff (`due_at` stays: lapse counts from it). The 5th failure moves it 12 h and stops renewals.
   */
  private recordFailure(sub: DueRow, invoiceId: string | null, reason: string): void {
    const { db, clock, outbox } = this.deps
    immediate(db, () => {
      const now = clock.now()
      // Only our own claim is undone; without one, only a subscription nobody claimed meanwhile.
      const ours = invoiceId
        ? db.prepare('DELETE FROM subscription_invoices WHERE invoice_id = ?').run(invoiceId).changes === 1
        : false
      if (invoiceId && !ours) return
      const failures = sub.consecutive_failures + 1
      const stopped = failures >= MAX_FAILURES
      const wait = RENEWAL_BACKOFF_MS[Math.min(failures, RENEWAL_BACKOFF_MS.length) - 1]!
      const why = stopped
        ? `renewals stopped after ${failures} failed invoice creations: ${reason}`
        : `invoice creation failed ${failures} time(s), next try after ${wait / 60_000} min: ${reason}`
      const updated = db
        .prepare(
          `UPDATE subscriptions SET next_renewal_at = ?, status = 'past_due', consecutive_failures = ?, failure_reason = ?,
           last_renewal_attempt_at = ?, updated_at = ?
         WHERE id = ? AND (? OR (next_renewal_at = ? AND consecutive_failures = ?))`,
        )
        .run(now + wait, failures, why, now, now, sub.id, ours ? 1 : 0, sub.next_renewal_at, sub.consecutive_failures)
      if (updated.changes !== 1) return
      emitEvent(
        outbox,
        'subscription.renewal_failed',
        {
          subscription_id: sub.id,
          license_id: sub.license_id,
          consecutive_failures: failures,
          renewals_stopped: stopped,
          reason,
          next_attempt_at: stopped ? null : new Date(now + wait).toISOString(),
          buyer_email: sub.buyer_email,
        },
        now,
      )
    })
  }

  /**
   * Claims left without a checkout by a worker that died between its claim and the provider call:
   * the invoice is closed, the cycle row removed and `next_renewal_at` put back to the cycle's due
   * date, so this tick bills the cycle again with one fresh checkout.
   */
  private repairStaleClaims(now: number): number {
    const { db, settlement } = this.deps
    const stale = db
      .prepare(
        `SELECT si.invoice_id, s.id AS subscription_id, s.next_renewal_at, s.due_at
         FROM subscription_invoices si
         JOIN invoices i ON i.id = si.invoice_id
         JOIN subscriptions s ON s.id = si.subscription_id
         WHERE i.kind = 'renewal' AND i.checkout_url IS NULL AND i.status IN ('pending', 'invalid')
           AND i.provider != 'free' AND s.last_renewal_attempt_at <= ?`,
      )
      .all(now - STALE_CLAIM_MS) as {
      invoice_id: string
      subscription_id: string
      next_renewal_at: number
      due_at: number
    }[]
    let repaired = 0
    for (const c of stale) {
      settlement.markUnpaid(c.invoice_id, 'invalid', { actor: 'system', via: 'renewal claim repair' })
      const undone = immediate(db, () => {
        if (db.prepare('DELETE FROM subscription_invoices WHERE invoice_id = ?').run(c.invoice_id).changes !== 1)
          return false
        db.prepare(
          'UPDATE subscriptions SET next_renewal_at = ?, updated_at = ? WHERE id = ? AND next_renewal_at = ?',
        ).run(c.due_at, now, c.subscription_id, c.next_renewal_at)
        return true
      })
      if (undone) repaired++
    }
    if (repaired > 0) this.deps.logger.warn('renewal claims repaired after an interrupted worker', { repaired })
    return repaired
  }

  start(): void {
    if (this.timer) return
    this.timer = setInterval(() => {
      if (this.running) return
      this.running = this.tick()
        .then(
          () => this.outage.written(),
          (err: unknown) => this.outage.failure(err, 'renewal tick failed'),
        )
        .finally(() => {
          this.running = null
        })
    }, this.deps.intervalMs ?? RENEWAL_INTERVAL_MS)
    this.timer.unref()
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    await this.running
  }
}
