import type { InvoiceFilter, InvoiceQuery, InvoiceView } from '../contract/licensing'
import { equals, likeContains, orderBy, whereAll, type LicensingDb, type SqlArg } from './db'
import type { PaymentFlag } from './settlement'

/** An invoice row as stored (migrations 001–002; kind 'top_up' since 016). */
export interface InvoiceRow {
  id: string
  kind: 'purchase' | 'redeem' | 'renewal' | 'upgrade' | 'top_up'
  product_id: string
  policy_id: string | null
  provider: 'btcpay' | 'zaprite' | 'free' | null
  provider_invoice_id: string | null
  checkout_url: string | null
  amount_sats: number
  status: InvoiceStatus
  discount_code_id: string | null
  discount_value: number | null
  buyer_email: string | null
  buyer_note: string | null
  redirect_url: string | null
  issued_license_id: string | null
  listed_currency: string | null
  listed_value: number | null
  exchange_rate_centibps: number | null
  exchange_rate_source: string | null
  created_at: number
  updated_at: number
  expires_at: number | null
  settled_at: number | null
  /** Migration 008: the provider's record disagreed with ours (see settlement.judgePayment). */
  payment_flag: PaymentFlag | null
  payment_flag_detail: string | null
  flagged_at: number | null
  /** Consecutive "not found" answers from the provider; three close the invoice. */
  not_found_count: number
}

export type InvoiceStatus = InvoiceView['status']

const VIEW_SELECT = `
  SELECT i.*, p.slug AS product_slug, p.name AS product_name, pol.slug AS policy_slug, pol.name AS policy_name,
    d.code AS discount_code
  FROM invoices i
  LEFT JOIN products p ON p.id = i.product_id
  LEFT JOIN policies pol ON pol.id = i.policy_id
  LEFT JOIN discount_codes d ON d.id = i.discount_code_id`

type ViewRow = InvoiceRow & {
  product_slug: string | null
  product_name: string | null
  policy_slug: string | null
  policy_name: string | null
  discount_code: string | null
}

function toView(r: ViewRow): InvoiceView {
  return {
    id: r.id,
    kind: r.kind,
    product_id: r.product_id,
    product_slug: r.product_slug,
    product_name: r.product_name,
    policy_id: r.policy_id,
    policy_slug: r.policy_slug,
    policy_name: r.policy_name,
    provider: r.provider,
    provider_invoice_id: r.provider_invoice_id,
    checkout_url: r.checkout_url,
    amount_sats: r.amount_sats,
    status: r.status,
    discount_code: r.discount_code,
    discount_value: r.discount_value,
    buyer_email: r.buyer_email,
    buyer_note: r.buyer_note,
    license_id: r.issued_license_id,
    listed_currency: r.listed_currency,
    listed_value: r.listed_value,
    exchange_rate_centibps: r.exchange_rate_centibps,
    exchange_rate_source: r.exchange_rate_source,
    created_at: r.created_at,
    updated_at: r.updated_at,
    expires_at: r.expires_at,
    settled_at: r.settled_at,
    payment_flag: r.payment_flag,
    payment_flag_detail: r.payment_flag_detail,
    flagged_at: r.flagged_at,
  }
}

/** An invoice list's filter; sort and order default to newest first. */
export type InvoiceSearch = Omit<InvoiceFilter, 'sort' | 'order'> & Partial<Pick<InvoiceFilter, 'sort' | 'order'>>

const INVOICE_SORT: Record<InvoiceFilter['sort'], string> = {
  created_at: 'i.created_at',
  settled_at: 'i.settled_at',
  amount_sats: 'i.amount_sats',
  status: 'i.status',
  buyer_email: 'i.buyer_email',
  product: 'p.name',
}

const invoiceOrder = (q: InvoiceSearch): string =>
  orderBy(INVOICE_SORT, q.sort ?? 'created_at', q.order ?? 'desc', 'i.id')

/** The WHERE clause of an invoice list (joined with products as `p`). */
function invoiceFilter(q: InvoiceSearch): { where: string; args: SqlArg[] } {
  const like = q.q ? likeContains(q.q) : ''
  return whereAll([
    equals('i.status', q.status || undefined),
    q.flagged && { sql: 'i.payment_flag IS NOT NULL', args: [] },
    equals('i.provider', q.provider || undefined),
    !!q.product && { sql: '(p.slug = ? OR i.product_id = ?)', args: [q.product, q.product] },
    !!q.q && {
      sql: "(i.id = ? OR i.provider_invoice_id = ? OR i.buyer_email LIKE ? ESCAPE '\\' OR p.name LIKE ? ESCAPE '\\' OR p.slug LIKE ? ESCAPE '\\')",
      args: [q.q, q.q, like, like, like],
    },
  ])
}

/** Reads and lists invoices; writes go through purchase.ts and settlement.ts. */
export class InvoiceStore {
  constructor(private readonly db: LicensingDb) {}

  get(id: string): InvoiceRow | undefined {
    return this.db.prepare('SELECT * FROM invoices WHERE id = ?').get(id) as InvoiceRow | undefined
  }

  byProviderRef(provider: string, providerInvoiceId: string): InvoiceRow | undefined {
    return this.db
      .prepare('SELECT * FROM invoices WHERE provider = ? AND provider_invoice_id = ?')
      .get(provider, providerInvoiceId) as InvoiceRow | undefined
  }

  view(id: string): InvoiceView | undefined {
    const r = this.db.prepare(`${VIEW_SELECT} WHERE i.id = ?`).get(id) as ViewRow | undefined
    return r ? toView(r) : undefined
  }

  list(q: InvoiceSearch & Pick<InvoiceQuery, 'limit' | 'offset'>): { items: InvoiceView[]; total: number } {
    const { where, args } = invoiceFilter(q)
    const total = (
      this.db
        .prepare(`SELECT count(*) AS n FROM invoices i LEFT JOIN products p ON p.id = i.product_id ${where}`)
        .get(...args) as { n: number }
    ).n
    const rows = this.db
      .prepare(`${VIEW_SELECT} ${where} ${invoiceOrder(q)} LIMIT ? OFFSET ?`)
      .all(...args, q.limit, q.offset) as ViewRow[]
    return { items: rows.map(toView), total }
  }

  /** Every invoice matching a filter, in its sort order, read lazily (CSV export). */
  *matching(q: InvoiceSearch, max: number): Generator<InvoiceView> {
    const { where, args } = invoiceFilter(q)
    const stmt = this.db.prepare(`${VIEW_SELECT} ${where} ${invoiceOrder(q)} LIMIT ?`)
    for (const r of stmt.iterate(...args, max) as Iterable<ViewRow>) yield toView(r)
  }

  /** Pending invoices, least recently touched first (for reconciliation). */
  pending(limit: number): InvoiceRow[] {
    return this.db
      .prepare(`SELECT * FROM invoices WHERE status = 'pending' ORDER BY updated_at ASC, id LIMIT ?`)
      .all(limit) as InvoiceRow[]
  }

  /** Records that the invoice was looked at (reconciliation order), without changing its state. */
  touch(id: string, now: number): void {
    this.db.prepare('UPDATE invoices SET updated_at = ? WHERE id = ?').run(now, id)
  }

  /** The provider answered for the invoice: touched, and its run of "not found" answers ends. */
  found(id: string, now: number): void {
    this.db.prepare('UPDATE invoices SET updated_at = ?, not_found_count = 0 WHERE id = ?').run(now, id)
  }

  /** One more "not found" from the provider in a row; answers the new count. */
  notFound(id: string, now: number): number {
    const row = this.db
      .prepare(
        'UPDATE invoices SET not_found_count = not_found_count + 1, updated_at = ? WHERE id = ? RETURNING not_found_count',
      )
      .get(now, id) as { not_found_count: number } | undefined
    return row?.not_found_count ?? 0
  }

  /** Open invoices per provider: pending, for the settling state and the reconciliation's list window. */
  openCount(provider: string): number {
    return (
      this.db.prepare("SELECT count(*) AS n FROM invoices WHERE provider = ? AND status = 'pending'").get(provider) as {
        n: number
      }
    ).n
  }

  /**
   * The oldest creation time among a provider's invoices that a list of paid ones could still
   * settle: pending ones, and ones expired within `lateMs` (late payments count). Null: none.
   */
  oldestOpen(provider: string, now: number, lateMs: number): number | null {
    const row = this.db
      .prepare(
        `SELECT min(created_at) AS t FROM invoices WHERE provider = ? AND provider_invoice_id IS NOT NULL
           AND (status = 'pending' OR (status = 'expired' AND expires_at >= ?))`,
      )
      .get(provider, now - lateMs) as { t: number | null }
    return row.t
  }
}
