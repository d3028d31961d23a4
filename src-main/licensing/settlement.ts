import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import { immediate, type LicensingDb } from './db'
import type { AuditLog } from './audit'
import type { InvoiceRow } from './invoices'
import { formatProviderMoney } from './providers/providerAmounts'
import type { ProviderInvoiceSnapshot, ProviderMoney } from './providers/types'

/** Issues the license for a settled invoice, inside the caller's transaction (synchronous). */
export interface LicenseIssuer {
  issueForInvoice(invoice: InvoiceRow, now: number): { licenseId: string; licenseKey: string }
}

/** Discount-code reservations (pending at checkout, redeemed on settle, cancelled when unpaid). */
export interface DiscountReservations {
  /** Marks the invoice's reservation redeemed and ties it to the license; inside the settle transaction. */
  confirm(invoiceId: string, licenseId: string | null, now: number): void
  /** Cancels the reservation of an invoice that will never be paid. */
  release(invoiceId: string, now: number): void
}

/** Queues an outbound event inside the caller's transaction (an outbox: never lost, never sent twice). */
export interface EventOutbox {
  enqueue(event: string, data: Record<string, unknown>, now: number): void
}

export type SettleOutcome =
  | { kind: 'issued'; licenseId: string }
  | { kind: 'already_settled'; licenseId: string | null }
  /** A branch before issuance (tier change, subscription renewal) handled it; no new license. */
  | { kind: 'handled'; branch: string; licenseId: string | null }
  | { kind: 'unknown_invoice' }

/**
 * A settle-time branch that runs before license issuance (spec 001 §4.3 rules 4–5: the tier-change
 * check, then the subscription handling, then issuance). `apply` runs inside the settle
 * transaction and returns null when the invoice is not its business.
 */
export interface SettleBranch {
  readonly name: string
  apply(invoice: InvoiceRow, now: number): { licenseId: string | null } | null
}

/**
 * Why an invoice needs the admin's eye: the provider's record disagrees with ours, the payment
 * arrived after the invoice expired (`paid_late`, settled), or the record named no amount and the
 * invoice settled on the provider's status alone (`amount_unverified`).
 */
export type PaymentFlag =
  'underpaid' | 'overpaid' | 'currency_mismatch' | 'store_mismatch' | 'paid_late' | 'amount_unverified'

/** The flags an invoice can settle with. */
export type SettledFlag = 'overpaid' | 'paid_late' | 'amount_unverified'

/** The verdict on a provider's record of a paid invoice: settle (maybe flagged), or refuse and flag. */
export type PaymentVerdict =
  | { settle: true; flag: null }
  | { settle: true; flag: SettledFlag; detail: string }
  | { settle: false; flag: PaymentFlag; detail: string }

const PAID_LATE = 'the payment arrived after the invoice expired'

/** What we charged, in the unit the provider was asked to charge: sats (as BTC) or the listed fiat cents. */
export function expectedCharge(inv: InvoiceRow): ProviderMoney {
  const fiat = inv.provider === 'zaprite' && (inv.listed_currency === 'USD' || inv.listed_currency === 'EUR')
  return fiat && inv.listed_value !== null
    ? { currency: inv.listed_currency!, value: inv.listed_value }
    : { currency: 'BTC', value: inv.amount_sats }
}

/**
 * Compares the provider's record with the local invoice. A different store or currency is never
 * ours to settle; less than we charged waits (the buyer may top up) and is flagged with both
 * amounts; more settles (the buyer paid) and is flagged so the admin can refund. A record that
 * names no amount at all is judged on its status and flagged; a late payment settles (late
 * payments count) and is flagged.
 */
export function judgePayment(
  inv: InvoiceRow,
  snap: ProviderInvoiceSnapshot,
  expectedStoreId: string | null,
): PaymentVerdict {
  const want = expectedCharge(inv)
  const verdict =
    storeMismatch(snap, expectedStoreId) ??
    currencyMismatch(snap, want) ??
    (snap.amount === null && snap.paid === null ? statusOnlyVerdict(snap, want) : paidAmountVerdict(snap, want))
  return snap.late ? markedLate(verdict) : verdict
}

/** A late payment that settles says so; a more pressing flag (overpaid) keeps its kind and says it too. */
function markedLate(verdict: PaymentVerdict): PaymentVerdict {
  if (!verdict.settle) return verdict
  if (verdict.flag === null) return { settle: true, flag: 'paid_late', detail: PAID_LATE }
  return { ...verdict, detail: `${verdict.detail}; ${PAID_LATE}` }
}

/** No amount on the record: its status decides, and the settlement is flagged as unverified. */
function statusOnlyVerdict(snap: ProviderInvoiceSnapshot, want: ProviderMoney): PaymentVerdict {
  const expected = `expected ${formatProviderMoney(want)}`
  const unreported = `paid an unreported amount (${snap.providerStatus}), ${expected}`
  if (snap.status !== 'settled') return { settle: false, flag: 'underpaid', detail: unreported }
  if (snap.paidVerdict === 'over') return { settle: true, flag: 'overpaid', detail: unreported }
  const detail = `settled on ${snap.providerStatus} alone: the record names no amount, ${expected}`
  return { settle: true, flag: 'amount_unverified', detail }
}

/** A record from another store than the connected one; null when either side names none. */
function storeMismatch(snap: ProviderInvoiceSnapshot, expectedStoreId: string | null): PaymentVerdict | null {
  if (expectedStoreId !== null && snap.storeId !== null && snap.storeId !== expectedStoreId) {
    return { settle: false, flag: 'store_mismatch', detail: `invoice belongs to store ${snap.storeId}` }
  }
  return null
}

/** A record charged, or paid, in another unit than the one we asked for. */
function currencyMismatch(snap: ProviderInvoiceSnapshot, want: ProviderMoney): PaymentVerdict | null {
  const theirs = [snap.paid?.currency, snap.amount?.currency].find((c) => c !== undefined && c !== want.currency)
  if (theirs !== undefined) {
    return { settle: false, flag: 'currency_mismatch', detail: `charged in ${theirs}, expected ${want.currency}` }
  }
  return null
}

/** Paid against charged, in the same unit: under waits, over settles flagged, exact settles. */
function paidAmountVerdict(snap: ProviderInvoiceSnapshot, want: ProviderMoney): PaymentVerdict {
  // Without a reported total, a settled record means its own amount was paid.
  const paid = snap.paid ?? (snap.status === 'settled' ? snap.amount : null)
  const both = (p: ProviderMoney | null) =>
    `paid ${p ? formatProviderMoney(p) : 'an unreported amount'}, expected ${formatProviderMoney(want)}`
  if (paid === null || paid.value < want.value || (snap.paidVerdict === 'under' && paid.value <= want.value)) {
    return { settle: false, flag: 'underpaid', detail: both(paid) }
  }
  if (paid.value > want.value || snap.paidVerdict === 'over')
    return { settle: true, flag: 'overpaid', detail: both(paid) }
  return { settle: true, flag: null }
}

export interface SettledBy {
  readonly actor: 'provider' | 'system' | 'admin' | 'buyer'
  /** e.g. `btcpay webhook InvoiceSettled`, `reconcile`, `zero-amount purchase`. */
  readonly via: string
}

/**
 * Turns a paid invoice into exactly one license. Everything happens in one IMMEDIATE transaction
 * — marking the invoice settled, issuing the license, counting the discount redemption, the audit
 * entry and the outbound event — so a replay, a concurrent duplicate delivery or a crash between
 * steps cannot issue a second license; `licenses.invoice_id UNIQUE` and
 * `invoices.issued_license_id UNIQUE` back it in the schema.
 */
export class Settlement {
  private readonly branches: SettleBranch[] = []

  constructor(
    private readonly deps: {
      db: LicensingDb
      clock: Clock
      logger: Logger
      issuer: LicenseIssuer
      outbox: EventOutbox
      discounts: DiscountReservations
      audit: AuditLog
      /**
       * Runs once the settle transaction committed, with what it did: the work on another
       * database (the buyer's gateway key) that a rolled-back settle must never have done.
       */
      afterCommit?: (outcome: SettleOutcome) => void
    },
  ) {}

  /** Registers a branch; branches run in registration order, all before issuance. */
  addBranch(branch: SettleBranch): void {
    this.branches.push(branch)
  }

  /**
   * Settles an invoice whose provider record was just re-fetched, after comparing it with ours:
   * settles (flagging an overpayment) or only flags it. `outcome` names what happened.
   */
  settleConfirmed(
    invoiceId: string,
    snap: ProviderInvoiceSnapshot,
    expectedStoreId: string | null,
    by: SettledBy,
  ): SettleOutcome | { kind: 'refused'; flag: PaymentFlag } {
    const inv = this.deps.db.prepare('SELECT * FROM invoices WHERE id = ?').get(invoiceId) as InvoiceRow | undefined
    if (!inv) return { kind: 'unknown_invoice' }
    if (inv.status === 'settled') return { kind: 'already_settled', licenseId: inv.issued_license_id }
    const verdict = judgePayment(inv, snap, expectedStoreId)
    if (!verdict.settle) {
      this.flag(inv.id, verdict.flag, verdict.detail, by)
      return { kind: 'refused', flag: verdict.flag }
    }
    return this.settle(inv.id, by, verdict.flag ? { flag: verdict.flag, detail: verdict.detail } : undefined)
  }

  /** Records a disagreement on the invoice for the admin (once per kind and detail), logged and audited. */
  flag(invoiceId: string, flag: PaymentFlag, detail: string, by: SettledBy): void {
    const { db, clock, logger } = this.deps
    const changed = immediate(db, () => {
      const now = clock.now()
      const n = db
        .prepare(
          `UPDATE invoices SET payment_flag = ?, payment_flag_detail = ?, flagged_at = ?, updated_at = ?
           WHERE id = ? AND (payment_flag IS NOT ? OR payment_flag_detail IS NOT ?)`,
        )
        .run(flag, detail, now, now, invoiceId, flag, detail).changes
      if (n === 1) this.writeAudit('invoice.flagged', invoiceId, by, now, { flag, detail })
      return n === 1
    })
    if (changed) logger.warn(`invoice flagged: ${flag}`, { invoice: invoiceId, detail, via: by.via })
  }

  settle(invoiceId: string, by: SettledBy, flagged?: { flag: PaymentFlag; detail: string }): SettleOutcome {
    const { db, clock, issuer } = this.deps
    const outcome = immediate(db, (): SettleOutcome => {
      const inv = db.prepare('SELECT * FROM invoices WHERE id = ?').get(invoiceId) as InvoiceRow | undefined
      if (!inv) return { kind: 'unknown_invoice' }
      if (inv.status === 'settled') return { kind: 'already_settled', licenseId: inv.issued_license_id }
      const now = clock.now()
      if (flagged) {
        db.prepare('UPDATE invoices SET payment_flag = ?, payment_flag_detail = ?, flagged_at = ? WHERE id = ?').run(
          flagged.flag,
          flagged.detail,
          now,
          inv.id,
        )
        this.writeAudit('invoice.flagged', inv.id, by, now, { flag: flagged.flag, detail: flagged.detail })
      }
      // Late payments count: an invoice we expired locally, or one the provider had called
      // invalid, still settles when the provider now says it is paid.
      db.prepare("UPDATE invoices SET status = 'settled', settled_at = ?, updated_at = ? WHERE id = ?").run(
        now,
        now,
        inv.id,
      )
      for (const branch of this.branches) {
        const handled = branch.apply(inv, now)
        if (handled) {
          if (inv.discount_code_id) this.deps.discounts.confirm(inv.id, handled.licenseId, now)
          this.audit(inv, by, now, { branch: branch.name, license_id: handled.licenseId })
          return { kind: 'handled', branch: branch.name, licenseId: handled.licenseId }
        }
      }
      const { licenseId } = issuer.issueForInvoice(inv, now)
      db.prepare('UPDATE invoices SET issued_license_id = ? WHERE id = ?').run(licenseId, inv.id)
      if (inv.discount_code_id) this.deps.discounts.confirm(inv.id, licenseId, now)
      this.audit(inv, by, now, { license_id: licenseId })
      // license.issued (source purchase) is written by Licenses.issue, in this transaction.
      return { kind: 'issued', licenseId }
    })
    if (flagged && outcome.kind !== 'already_settled' && outcome.kind !== 'unknown_invoice') {
      this.deps.logger.warn(`invoice settled and flagged: ${flagged.flag}`, {
        invoice: invoiceId,
        detail: flagged.detail,
      })
    }
    if (outcome.kind === 'issued') {
      this.deps.logger.info('invoice settled, license issued', {
        invoice: invoiceId,
        license: outcome.licenseId,
        via: by.via,
      })
    }
    this.runAfterCommit(invoiceId, outcome)
    return outcome
  }

  /** The after-commit work never undoes or fails a settle that committed. */
  private runAfterCommit(invoiceId: string, outcome: SettleOutcome): void {
    if (outcome.kind !== 'issued' && outcome.kind !== 'handled') return
    try {
      this.deps.afterCommit?.(outcome)
    } catch (err) {
      this.deps.logger.error('work after a settle failed', { invoice: invoiceId, error: err })
    }
  }

  /**
   * Closes a still-pending invoice as expired or invalid and releases its discount reservation;
   * false when it was no longer pending (a settled invoice is never reopened).
   */
  markUnpaid(invoiceId: string, to: 'expired' | 'invalid', by: SettledBy): boolean {
    const { db, clock } = this.deps
    return immediate(db, () => {
      const now = clock.now()
      const changed =
        db
          .prepare("UPDATE invoices SET status = ?, updated_at = ? WHERE id = ? AND status = 'pending'")
          .run(to, now, invoiceId).changes === 1
      if (!changed) return false
      this.deps.discounts.release(invoiceId, now)
      this.writeAudit(`invoice.${to}`, invoiceId, by, now, {})
      return true
    })
  }

  private audit(inv: InvoiceRow, by: SettledBy, now: number, details: Record<string, unknown>): void {
    this.writeAudit('invoice.settled', inv.id, by, now, details)
  }

  private writeAudit(
    action: string,
    invoiceId: string,
    by: SettledBy,
    _now: number,
    details: Record<string, unknown>,
  ): void {
    this.deps.audit.record({
      actor: by.actor,
      action,
      targetType: 'invoice',
      targetId: invoiceId,
      details: { via: by.via, ...details },
    })
  }
}
