import type { Clock } from '../core/clock'
import type { Logger } from '../core/logger'
import { immediate, type LicensingDb } from './db'
import type { AuditLog } from './audit'
import type { InvoiceRow } from './invoices'

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
    },
  ) {}

  /** Registers a branch; branches run in registration order, all before issuance. */
  addBranch(branch: SettleBranch): void {
    this.branches.push(branch)
  }

  settle(invoiceId: string, by: SettledBy): SettleOutcome {
    const { db, clock, issuer } = this.deps
    const outcome = immediate(db, (): SettleOutcome => {
      const inv = db.prepare('SELECT * FROM invoices WHERE id = ?').get(invoiceId) as InvoiceRow | undefined
      if (!inv) return { kind: 'unknown_invoice' }
      if (inv.status === 'settled') return { kind: 'already_settled', licenseId: inv.issued_license_id }
      const now = clock.now()
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
    if (outcome.kind === 'issued') {
      this.deps.logger.info('invoice settled, license issued', {
        invoice: invoiceId,
        license: outcome.licenseId,
        via: by.via,
      })
    }
    return outcome
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
