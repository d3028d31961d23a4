/**
 * Discount codes: `percent` (1–100, any currency), `fixed_sats` (an amount off) and `set_price`
 * (the price becomes the amount), both expressed in the code's `discount_currency`, and
 * `free_license` (redeemed at POST /v1/redeem for a key without payment). Codes may be scoped to a
 * product and a policy, capped, and may expire.
 *
 * Uses are reservations: `reserve` (pending, when an invoice is created, inside the caller's
 * transaction; it re-checks the cap) → `markRedeemed` (settled) or `release` (expired/invalid).
 * The cap counts pending and redeemed uses, so unpaid invoices cannot overshoot it. A reservation
 * lapses after `reservationMs` unpaid (DISCOUNT_RESERVATION_MINUTES, 30 by default): every read of
 * a code's usage first releases its lapsed reservations, on the injected clock, so abandoned
 * checkouts stop holding a launch code. Every settled invoice that used a code counts, late
 * payments included; one that lands after its reservation lapsed and the cap was taken meanwhile
 * is honoured (the buyer paid) and flagged `over_cap` for the admin.
 * Error codes: discount_not_found 404, discount_expired 400, discount_exhausted 409,
 *   discount_not_applicable 400 (other product or tier), discount_wrong_kind 400.
 */
import { randomUUID } from 'node:crypto'
import {
  type Currency,
  type DiscountInput,
  type DiscountKind,
  type DiscountPatch,
  type DiscountQuery,
  type DiscountView,
} from '../contract/licensing'
import { ApiError } from '../contract/errors'
import type { Clock } from '../lib/clock'
import type { AuditLog } from './audit'
import type { PolicyRow, ProductRow } from './productCatalog'
import { orderBy, searchAny, type LicensingDb } from './db'
import { dbOutbox, emitEvent } from './outboundEvents'
import type { EventOutbox } from './settlement'

export interface DiscountRow {
  id: string
  code: string
  kind: DiscountKind
  value: number
  discount_currency: Currency
  product_id: string | null
  policy_id: string | null
  max_redemptions: number | null
  redemption_count: number
  expires_at: number | null
  active: number
  note: string
  created_at: number
  updated_at: number
}

const DISCOUNT_SORT: Record<DiscountQuery['sort'], string> = {
  created_at: 'dc.created_at',
  code: 'dc.code COLLATE NOCASE',
  kind: 'dc.kind',
  expires_at: 'dc.expires_at',
  product: 'p.name COLLATE NOCASE',
}

export const DEFAULT_RESERVATION_MS = 30 * 60_000

export class Discounts {
  constructor(
    private readonly db: LicensingDb,
    private readonly clock: Clock,
    private readonly audit: AuditLog,
    /** Where code.redeemed goes; defaults to the outbox table of `db`. */
    private readonly outbox: EventOutbox = dbOutbox(db),
    private readonly reservationMs: number = DEFAULT_RESERVATION_MS,
  ) {}

  /**
   * Releases reservations held longer than `reservationMs` by invoices still unpaid (all codes, or
   * one); returns how many. Their invoices stay payable: a late payment is counted on settle.
   */
  releaseLapsed(codeId?: string): number {
    const cutoff = this.clock.now() - this.reservationMs
    return this.db
      .prepare(
        `UPDATE discount_redemptions SET status = 'cancelled'
         WHERE status = 'pending' AND coalesce(reserved_at, redeemed_at) <= ? AND (? IS NULL OR discount_code_id = ?)`,
      )
      .run(cutoff, codeId ?? null, codeId ?? null).changes
  }

  private usage(codeId: string): { pending: number; redeemed: number } {
    this.releaseLapsed(codeId)
    return this.db
      .prepare(
        `SELECT coalesce(sum(status = 'pending'), 0) AS pending, coalesce(sum(status = 'redeemed'), 0) AS redeemed
         FROM discount_redemptions WHERE discount_code_id = ?`,
      )
      .get(codeId) as { pending: number; redeemed: number }
  }

  view(r: DiscountRow): DiscountView {
    const u = this.usage(r.id)
    const overBy = r.max_redemptions === null ? 0 : Math.max(0, u.redeemed - r.max_redemptions)
    return {
      id: r.id,
      code: r.code,
      kind: r.kind,
      value: r.value,
      discount_currency: r.discount_currency,
      product_id: r.product_id,
      product_name: r.product_id === null ? null : this.productName(r.product_id),
      policy_id: r.policy_id,
      max_redemptions: r.max_redemptions,
      redemption_count: u.redeemed,
      pending_count: u.pending,
      over_cap_by: overBy,
      over_cap_invoices: overBy > 0 ? this.overCapInvoices(r.id) : [],
      expires_at: r.expires_at,
      active: r.active === 1,
      note: r.note,
      created_at: r.created_at,
      updated_at: r.updated_at,
    }
  }

  private productName(productId: string): string | null {
    const p = this.db.prepare('SELECT name FROM products WHERE id = ?').get(productId) as { name: string } | undefined
    return p?.name ?? null
  }

  /** Settled invoices whose payment landed after the code's cap was taken (late payments). */
  private overCapInvoices(codeId: string): string[] {
    return (
      this.db
        .prepare(
          `SELECT invoice_id FROM discount_redemptions WHERE discount_code_id = ? AND over_cap = 1 AND status = 'redeemed'
           AND invoice_id IS NOT NULL ORDER BY redeemed_at`,
        )
        .all(codeId) as { invoice_id: string }[]
    ).map((x) => x.invoice_id)
  }

  row(id: string): DiscountRow | undefined {
    return this.db.prepare('SELECT * FROM discount_codes WHERE id = ?').get(id) as DiscountRow | undefined
  }

  byCode(code: string): DiscountRow | undefined {
    return this.db.prepare('SELECT * FROM discount_codes WHERE code = ? COLLATE NOCASE').get(code.trim()) as
      DiscountRow | undefined
  }

  private must(id: string): DiscountRow {
    const r = this.row(id)
    if (!r) throw new ApiError('not_found', `no discount code ${id}`)
    return r
  }

  /** One page of codes matching the search (the code, or the product it is scoped to), and how many match. */
  page(q: DiscountQuery): { total: number; discounts: DiscountView[] } {
    const { where, args } = searchAny(['dc.code', 'p.name', 'p.slug'], q.q)
    const from = `FROM discount_codes dc LEFT JOIN products p ON p.id = dc.product_id ${where}`
    const total = (this.db.prepare(`SELECT count(*) AS n ${from}`).get(...args) as { n: number }).n
    const rows = this.db
      .prepare(`SELECT dc.* ${from} ${orderBy(DISCOUNT_SORT, q.sort, q.order, 'dc.id')} LIMIT ? OFFSET ?`)
      .all(...args, q.limit, q.offset) as DiscountRow[]
    return { total, discounts: rows.map((r) => this.view(r)) }
  }

  create(input: DiscountInput): DiscountView {
    this.checkShape(input)
    const now = this.clock.now()
    const id = randomUUID()
    try {
      this.db
        .prepare(
          `INSERT INTO discount_codes (id, code, kind, value, discount_currency, product_id, policy_id, max_redemptions, expires_at, active, note, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          id,
          input.code,
          input.kind,
          input.kind === 'free_license' ? 0 : input.value,
          input.discount_currency,
          input.product_id,
          input.policy_id,
          input.max_redemptions,
          input.expires_at,
          +input.active,
          input.note,
          now,
          now,
        )
    } catch (err) {
      if (err instanceof Error && /UNIQUE/.test(err.message))
        throw new ApiError('conflict', `code ${input.code} exists`)
      throw err
    }
    this.audit.record({
      actor: 'admin',
      action: 'discount.create',
      targetType: 'discount_code',
      targetId: id,
      details: { code: input.code, kind: input.kind },
    })
    return this.view(this.must(id))
  }

  update(id: string, patch: DiscountPatch): DiscountView {
    const cur = this.must(id)
    const next: DiscountInput = {
      code: patch.code ?? cur.code,
      kind: patch.kind ?? cur.kind,
      value: patch.value ?? cur.value,
      discount_currency: patch.discount_currency ?? cur.discount_currency,
      product_id: patch.product_id !== undefined ? patch.product_id : cur.product_id,
      policy_id: patch.policy_id !== undefined ? patch.policy_id : cur.policy_id,
      max_redemptions: patch.max_redemptions !== undefined ? patch.max_redemptions : cur.max_redemptions,
      expires_at: patch.expires_at !== undefined ? patch.expires_at : cur.expires_at,
      active: patch.active ?? cur.active === 1,
      note: patch.note ?? cur.note,
    }
    this.checkShape(next)
    try {
      this.db
        .prepare(
          `UPDATE discount_codes SET code = ?, kind = ?, value = ?, discount_currency = ?, product_id = ?, policy_id = ?,
             max_redemptions = ?, expires_at = ?, active = ?, note = ?, updated_at = ? WHERE id = ?`,
        )
        .run(
          next.code,
          next.kind,
          next.kind === 'free_license' ? 0 : next.value,
          next.discount_currency,
          next.product_id,
          next.policy_id,
          next.max_redemptions,
          next.expires_at,
          +next.active,
          next.note,
          this.clock.now(),
          id,
        )
    } catch (err) {
      if (err instanceof Error && /UNIQUE/.test(err.message)) throw new ApiError('conflict', `code ${next.code} exists`)
      throw err
    }
    this.audit.record({
      actor: 'admin',
      action: 'discount.update',
      targetType: 'discount_code',
      targetId: id,
      details: { changed: Object.keys(patch) },
    })
    return this.view(this.must(id))
  }

  remove(id: string): void {
    const cur = this.must(id)
    const used = this.db
      .prepare('SELECT count(*) AS n FROM discount_redemptions WHERE discount_code_id = ?')
      .get(id) as { n: number }
    const onInvoices = this.db.prepare('SELECT count(*) AS n FROM invoices WHERE discount_code_id = ?').get(id) as {
      n: number
    }
    if (used.n + onInvoices.n > 0)
      throw new ApiError('conflict', `code ${cur.code} has been used; deactivate it instead`)
    this.db.prepare('DELETE FROM discount_codes WHERE id = ?').run(id)
    this.audit.record({
      actor: 'admin',
      action: 'discount.delete',
      targetType: 'discount_code',
      targetId: id,
      details: { code: cur.code },
    })
  }

  private checkShape(d: DiscountInput): void {
    if (d.kind === 'percent' && (d.value < 1 || d.value > 100))
      throw new ApiError('bad_input', 'a percent code needs a value from 1 to 100')
    if (d.kind === 'fixed_sats' && d.value < 1)
      throw new ApiError('bad_input', 'a fixed_sats code needs a value above 0')
    if (d.product_id !== null && !this.db.prepare('SELECT 1 FROM products WHERE id = ?').get(d.product_id))
      throw new ApiError('bad_input', `no product ${d.product_id}`)
    if (d.policy_id !== null) {
      const pol = this.db.prepare('SELECT product_id FROM policies WHERE id = ?').get(d.policy_id) as
        { product_id: string } | undefined
      if (!pol) throw new ApiError('bad_input', `no policy ${d.policy_id}`)
      if (d.product_id !== null && pol.product_id !== d.product_id)
        throw new ApiError('bad_input', 'the policy belongs to another product')
    }
  }

  /** Whether a code may be used now for this product and tier; the reason is a clear error. */
  check(code: string, product: ProductRow, policy: PolicyRow): DiscountRow {
    const d = this.byCode(code)
    if (!d || d.active !== 1)
      throw new ApiError('discount_not_found', `unknown discount code ${code.trim()}`, { status: 404 })
    if (d.expires_at !== null && this.clock.now() >= d.expires_at)
      throw new ApiError(
        'discount_expired',
        `discount code ${d.code} expired on ${new Date(d.expires_at).toISOString()}`,
        { status: 400 },
      )
    if (d.product_id !== null && d.product_id !== product.id)
      throw new ApiError('discount_not_applicable', `discount code ${d.code} is not valid for ${product.name}`, {
        status: 400,
      })
    if (d.policy_id !== null && d.policy_id !== policy.id)
      throw new ApiError(
        'discount_not_applicable',
        `discount code ${d.code} is not valid for the ${policy.name} tier`,
        { status: 400 },
      )
    this.checkCap(d)
    return d
  }

  private checkCap(d: DiscountRow): void {
    if (d.max_redemptions === null) return
    const u = this.usage(d.id)
    if (u.pending + u.redeemed >= d.max_redemptions)
      throw new ApiError('discount_exhausted', `discount code ${d.code} has been used up (${d.max_redemptions} uses)`, {
        status: 409,
      })
  }

  /** Reserves one use for an invoice; call inside the transaction that inserts the invoice. */
  reserve(r: {
    codeId: string
    invoiceId: string
    listedCurrency: Currency
    discountValue: number
    buyerEmail?: string | null
    status?: 'pending' | 'redeemed'
    licenseId?: string | null
  }): string {
    const d = this.must(r.codeId)
    this.checkCap(d)
    const id = randomUUID()
    this.db
      .prepare(
        `INSERT INTO discount_redemptions (id, discount_code_id, invoice_id, license_id, buyer_email, redeemed_at, reserved_at, status, listed_currency, discount_value)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        id,
        r.codeId,
        r.invoiceId,
        r.licenseId ?? null,
        r.buyerEmail ?? null,
        this.clock.now(),
        this.clock.now(),
        r.status ?? 'pending',
        r.listedCurrency,
        r.discountValue,
      )
    if (r.status === 'redeemed') {
      this.syncCount(r.codeId)
      this.announceRedeemed(id)
    }
    return id
  }

  /**
   * Counts the invoice's use on settle, inside the settle transaction. A reservation released
   * meanwhile (lapsed, or the invoice expired) still counts: the buyer paid. When the cap was
   * taken by others in the meantime, the use is flagged over cap and audited, never hidden.
   */
  markRedeemed(invoiceId: string, licenseId: string): void {
    const now = this.clock.now()
    // Lapse first, so each row's status below is what the cap count sees.
    const codes = this.db
      .prepare('SELECT DISTINCT discount_code_id AS id FROM discount_redemptions WHERE invoice_id = ?')
      .all(invoiceId) as { id: string }[]
    for (const c of codes) this.releaseLapsed(c.id)
    const rows = this.db
      .prepare(
        `SELECT r.id, r.discount_code_id, r.status, c.code, c.max_redemptions FROM discount_redemptions r
         JOIN discount_codes c ON c.id = r.discount_code_id
         WHERE r.invoice_id = ? AND r.status IN ('pending', 'cancelled')`,
      )
      .all(invoiceId) as {
      id: string
      discount_code_id: string
      status: 'pending' | 'cancelled'
      code: string
      max_redemptions: number | null
    }[]
    for (const r of rows) {
      const u = this.usage(r.discount_code_id)
      // A pending reservation already holds its slot; a released one needs a free slot now.
      const taken = u.redeemed + u.pending - (r.status === 'pending' ? 1 : 0)
      const over = r.max_redemptions !== null && taken >= r.max_redemptions
      this.db
        .prepare(
          `UPDATE discount_redemptions SET status = 'redeemed', license_id = ?, redeemed_at = ?, over_cap = ? WHERE id = ?`,
        )
        .run(licenseId, now, over ? 1 : 0, r.id)
      if (over) {
        this.audit.record({
          actor: 'system',
          action: 'discount.over_cap',
          targetType: 'discount_code',
          targetId: r.discount_code_id,
          details: { code: r.code, invoice_id: invoiceId, max_redemptions: r.max_redemptions },
        })
      }
      this.syncCount(r.discount_code_id)
      this.announceRedeemed(r.id)
    }
  }

  /** code.redeemed, inside the transaction that marks the redemption. */
  private announceRedeemed(redemptionId: string): void {
    const r = this.db
      .prepare(
        `SELECT r.id, r.discount_code_id, c.code, c.kind, r.invoice_id, r.license_id, r.buyer_email
         FROM discount_redemptions r JOIN discount_codes c ON c.id = r.discount_code_id WHERE r.id = ?`,
      )
      .get(redemptionId) as {
      id: string
      discount_code_id: string
      code: string
      kind: string
      invoice_id: string
      license_id: string | null
      buyer_email: string | null
    }
    const data = {
      redemption_id: r.id,
      code_id: r.discount_code_id,
      code: r.code,
      kind: r.kind,
      invoice_id: r.invoice_id,
      license_id: r.license_id,
      buyer_email: r.buyer_email,
    }
    emitEvent(this.outbox, 'code.redeemed', data, this.clock.now())
  }

  release(invoiceId: string): void {
    this.db
      .prepare(`UPDATE discount_redemptions SET status = 'cancelled' WHERE invoice_id = ? AND status = 'pending'`)
      .run(invoiceId)
  }

  private syncCount(codeId: string): void {
    this.db
      .prepare(
        `UPDATE discount_codes SET redemption_count = (SELECT count(*) FROM discount_redemptions WHERE discount_code_id = ? AND status = 'redeemed') WHERE id = ?`,
      )
      .run(codeId, codeId)
  }
}
