import { randomUUID } from 'node:crypto'
import type { PurchaseInput, PurchaseSession, PurchaseStatus, Quote } from '../contract/licensing'
import { ApiError } from '../contract/errors'
import type { Clock } from '../core/clock'
import type { Logger } from '../core/logger'
import { immediate, type LicensingDb } from './db'
import type { InvoiceRow, InvoiceStore } from './invoices'
import { iso } from './json'
import type { ProviderConnections } from './providers/connections'
import type { ListedPrice } from './providers/types'
import type { Catalog } from './catalog'
import type { Discounts } from './discounts'
import { invoiceRateColumns, type PricedQuote, type Pricing } from './pricing'
import { assertRedirectAllowed } from './redirects'
import type { Settlement } from './settlement'

/** How long a local invoice waits for payment before reconciliation expires it. */
export const INVOICE_TTL_MS = 24 * 60 * 60 * 1000

/** The four audit columns are NULL for SAT items (identity conversion): those read as SAT. */
function asCurrency(c: string | null): ListedPrice['currency'] {
  return c === 'USD' || c === 'EUR' || c === 'BTC' ? c : 'SAT'
}

/**
 * The buyer's purchase: a priced local invoice, then a checkout at the active provider. A zero
 * total (a 100% code, a free tier) settles at once without a provider.
 */
export class Purchases {
  constructor(
    private readonly deps: {
      db: LicensingDb
      clock: Clock
      logger: Logger
      invoices: InvoiceStore
      providers: ProviderConnections
      settlement: Settlement
      catalog: Catalog
      pricing: Pricing
      discounts: Discounts
      /** Public base URL for poll and thank-you links. */
      publicUrl: () => string
      /** REDIRECT_ALLOWLIST: origins a redirect_url may point at besides the product's prefix and publicUrl. */
      redirectAllowlist?: readonly string[]
    },
  ) {}

  async start(input: PurchaseInput, signal?: AbortSignal): Promise<PurchaseSession> {
    signal?.throwIfAborted()
    if (input.redirect_url) {
      const product = this.deps.catalog.productBySlug(input.product)
      assertRedirectAllowed(input.redirect_url, {
        productPrefix: product?.return_url_prefix ?? null,
        publicUrl: this.deps.publicUrl(),
        allowlist: this.deps.redirectAllowlist ?? [],
      })
    }
    const quote = await this.deps.pricing.quote({
      productSlug: input.product,
      policy: input.policy ?? input.policy_slug,
      code: input.code,
    })
    const { invoiceId } = await this.openInvoice(
      {
        kind: 'purchase',
        quote,
        buyerEmail: input.buyer_email ?? null,
        buyerNote: input.buyer_note ?? null,
        redirectUrl: input.redirect_url ?? null,
      },
      signal,
    )
    return this.session(invoiceId, quote)
  }

  /**
   * Persists a priced invoice (with its discount reservation and whatever `alsoInTransaction`
   * writes, e.g. a tier_changes row) and opens its checkout at the active provider. Purchases use
   * it now; upgrades and renewals are built on it. A zero total settles at once, without a provider.
   */
  async openInvoice(
    o: {
      kind: 'purchase' | 'upgrade' | 'renewal'
      quote: Quote
      buyerEmail: string | null
      buyerNote: string | null
      redirectUrl: string | null
      alsoInTransaction?: (invoiceId: string, now: number) => void
    },
    signal?: AbortSignal,
  ): Promise<{ invoiceId: string; checkoutUrl: string | null }> {
    const { db, clock, providers, catalog, discounts } = this.deps
    const { quote } = o
    const provider = quote.amount_sats > 0 ? providers.active() : null
    if (quote.amount_sats > 0 && !provider) {
      throw new ApiError(
        'unavailable',
        'no payment provider is connected; the seller has to connect BTCPay Server or Zaprite',
      )
    }
    const id = randomUUID()
    const now = clock.now()
    const audit = invoiceRateColumns(quote)
    immediate(db, () => {
      db.prepare(
        `INSERT INTO invoices (id, kind, product_id, policy_id, provider, amount_sats, status, discount_code_id,
           discount_value, buyer_email, buyer_note, redirect_url, listed_currency, listed_value, exchange_rate_centibps,
           exchange_rate_source, created_at, updated_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        id,
        o.kind,
        quote.product_id,
        quote.policy_id,
        provider ? provider.kind : 'free',
        quote.amount_sats,
        quote.discount_code_id,
        quote.discount_code_id ? quote.discount_value : null,
        o.buyerEmail,
        o.buyerNote,
        o.redirectUrl,
        audit.listed_currency,
        audit.listed_value,
        audit.exchange_rate_centibps,
        audit.exchange_rate_source,
        now,
        now,
        now + INVOICE_TTL_MS,
      )
      // Re-checks the cap under the write lock, so concurrent buyers cannot overshoot it.
      if (quote.discount_code_id) {
        discounts.reserve({
          codeId: quote.discount_code_id,
          invoiceId: id,
          listedCurrency: quote.listed_currency,
          discountValue: quote.discount_value,
          buyerEmail: o.buyerEmail,
        })
      }
      o.alsoInTransaction?.(id, now)
    })

    if (!provider) {
      this.deps.settlement.settle(id, { actor: 'buyer', via: 'zero-amount invoice' })
      return { invoiceId: id, checkoutUrl: null }
    }

    const product = catalog.productRow(quote.product_id)
    const policy = catalog.policyRow(quote.policy_id)
    let checkout
    try {
      checkout = await provider.createCheckout(
        {
          localInvoiceId: id,
          amountSats: quote.amount_sats,
          listed: { currency: quote.listed_currency, value: quote.listed_value },
          redirectUrl: o.redirectUrl ?? this.thankYouUrl(id),
          label: `${product?.name ?? quote.product_slug} (${policy?.name ?? quote.policy_slug})`,
          buyerEmail: o.buyerEmail,
        },
        signal,
      )
    } catch (err) {
      this.deps.settlement.markUnpaid(id, 'invalid', { actor: 'system', via: `${provider.kind} checkout failed` })
      this.deps.logger.warn('checkout creation failed', { invoice: id, provider: provider.kind, error: err })
      if (err instanceof ApiError)
        throw new ApiError(err.code, `could not open a checkout: ${err.message}`, { status: 502 })
      throw new ApiError('upstream_error', 'could not open a checkout at the payment provider')
    }
    db.prepare('UPDATE invoices SET provider_invoice_id = ?, checkout_url = ?, updated_at = ? WHERE id = ?').run(
      checkout.providerInvoiceId,
      checkout.checkoutUrl,
      clock.now(),
      id,
    )
    return { invoiceId: id, checkoutUrl: checkout.checkoutUrl }
  }

  thankYouUrl(invoiceId: string): string {
    return `${this.deps.publicUrl()}/thank-you?invoice=${invoiceId}`
  }

  /**
   * The purchase answer. `btcpay_invoice_id` is always a string (the SDKs declare it one): a
   * zero-total purchase has no provider invoice and answers `free-<invoice id>`, as Keysat does.
   * `base_price_sats` is the undiscounted price and `discount_applied_sats` what the code took off.
   */
  private session(id: string, quote: PricedQuote): PurchaseSession {
    const inv = this.deps.invoices.get(id) as InvoiceRow
    return {
      invoice_id: id,
      btcpay_invoice_id: inv.provider_invoice_id ?? `free-${id}`,
      provider: inv.provider === 'btcpay' || inv.provider === 'zaprite' ? inv.provider : 'free',
      provider_invoice_id: inv.provider_invoice_id,
      // A settled zero-total purchase has no checkout: the thank-you page shows its key.
      checkout_url: inv.checkout_url ?? this.thankYouUrl(id),
      amount_sats: inv.amount_sats,
      base_price_sats: quote.base_price_sats,
      discount_applied_sats: Math.max(0, quote.base_price_sats - inv.amount_sats),
      listed_currency: asCurrency(inv.listed_currency),
      listed_value: inv.listed_value ?? inv.amount_sats,
      exchange_rate_centibps: inv.exchange_rate_centibps,
      exchange_rate_source: inv.exchange_rate_source,
      poll_url: `${this.deps.publicUrl()}/v1/purchase/${id}`,
      status: inv.status === 'settled' ? 'settled' : 'pending',
      expires_at: inv.expires_at === null ? null : iso(inv.expires_at),
    }
  }

  /** `GET /v1/purchase/:id`: the invoice's state and, once settled, the license key. */
  poll(id: string): PurchaseStatus {
    const r = this.deps.db
      .prepare(
        `SELECT i.*, p.slug AS product_slug, pol.slug AS policy_slug, l.license_key AS license_key
         FROM invoices i
         LEFT JOIN products p ON p.id = i.product_id
         LEFT JOIN policies pol ON pol.id = i.policy_id
         LEFT JOIN licenses l ON l.id = i.issued_license_id
         WHERE i.id = ?`,
      )
      .get(id) as
      (InvoiceRow & { product_slug: string | null; policy_slug: string | null; license_key: string | null }) | undefined
    if (!r) throw new ApiError('not_found', 'no such purchase')
    return {
      invoice_id: r.id,
      status: r.status,
      product_id: r.product_id,
      product_slug: r.product_slug,
      policy_slug: r.policy_slug,
      amount_sats: r.amount_sats,
      listed_currency: asCurrency(r.listed_currency),
      listed_value: r.listed_value ?? r.amount_sats,
      checkout_url: r.status === 'pending' ? r.checkout_url : null,
      license_key: r.status === 'settled' ? r.license_key : null,
      license_id: r.status === 'settled' ? r.issued_license_id : null,
      expires_at: r.expires_at === null ? null : iso(r.expires_at),
      settled_at: r.settled_at === null ? null : iso(r.settled_at),
    }
  }
}
