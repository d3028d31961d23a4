import { randomUUID } from 'node:crypto'
import type { PurchaseInput, PurchaseSession, PurchaseStatus, Quote } from '../contract/licensing'
import { ApiError } from '../contract/errors'
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import { immediate, type LicensingDb } from './db'
import type { InvoiceRow, InvoiceStore } from './invoices'
import { iso } from './json'
import type { LicenseRow } from './licenses'
import type { ProviderConnections } from './providers/connections'
import type { CreatedCheckout, ListedPrice, PaymentProvider } from './providers/types'
import type { Catalog } from './productCatalog'
import type { Discounts } from './discounts'
import { invoiceRateColumns, type PricedQuote, type Pricing } from './pricing'
import { assertRedirectAllowed } from './redirects'
import type { EventOutbox, Settlement } from './settlement'
import type { LicensingServices } from './licensingServices'
import { startsTrial } from './subscriptions'

/** How long a local invoice waits for payment before reconciliation expires it. */
export const INVOICE_TTL_MS = 24 * 60 * 60 * 1000

/** The four audit columns are NULL for SAT items (identity conversion): those read as SAT. */
function asCurrency(c: string | null): ListedPrice['currency'] {
  return c === 'USD' || c === 'EUR' || c === 'BTC' ? c : 'SAT'
}

/** A trial's first cycle: nothing charged, no code; the tier's price stays as the base (`base_price_sats`). */
function freeTrial(q: PricedQuote): PricedQuote {
  return {
    ...q,
    discount_code_id: null,
    discount_code: null,
    discount_value: 0,
    listed_value: 0,
    amount_sats: 0,
    exchange_rate_centibps: null,
    exchange_rate_source: null,
    free: true,
  }
}

/** What an invoice is opened for: a purchase, a tier change, a renewal, a top-up. */
export interface InvoiceOrder {
  kind: 'purchase' | 'upgrade' | 'renewal' | 'top_up'
  quote: Quote
  buyerEmail: string | null
  buyerNote: string | null
  redirectUrl: string | null
  /** What the provider's checkout names; default: the product and the tier. */
  label?: string
  /** More rows written in the invoice's own transaction (a tier_changes row, a cycle row). */
  alsoInTransaction?: (invoiceId: string, now: number) => void
}

/** What a service selling to an existing license (a tier change, a top-up) opens its invoices with. */
export interface LicenseChargeDeps {
  services: LicensingServices
  purchases: Purchases
  outbox: EventOutbox
  /** Public base URL for the poll link. */
  publicUrl: () => string
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
    if (input.redirect_url)
      this.assertRedirect(input.redirect_url, this.deps.catalog.productBySlug(input.product)?.return_url_prefix ?? null)
    const policy = input.policy ?? input.policy_slug
    // A trial tier's first cycle is free (Keysat): no code applies, the license is issued inline.
    const trial = this.startsTrial(input.product, policy)
    const priced = await this.deps.pricing.quote({
      productSlug: input.product,
      policy,
      code: trial ? null : input.code,
    })
    const quote = trial ? freeTrial(priced) : priced
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

  /** Whether the purchase of this tier starts a free trial; an unknown product is left to the quote to refuse. */
  private startsTrial(productSlug: string, policySlug: string | undefined): boolean {
    const product = this.deps.catalog.productBySlug(productSlug)
    return product ? startsTrial(this.deps.catalog.resolvePolicy(product, policySlug)) : false
  }

  /**
   * Persists a priced invoice (with its discount reservation and whatever `alsoInTransaction`
   * writes, e.g. a tier_changes row) and opens its checkout at the active provider. Purchases use
   * it now; upgrades and renewals are built on it. A zero total settles at once, without a provider.
   */
  async openInvoice(o: InvoiceOrder, signal?: AbortSignal): Promise<{ invoiceId: string; checkoutUrl: string | null }> {
    const { db, clock } = this.deps
    const provider = o.quote.amount_sats > 0 ? this.activeProvider() : null
    const id = randomUUID()
    immediate(db, () => this.persistInvoice(id, o, provider?.kind ?? 'free', clock.now(), null))

    if (!provider) {
      this.deps.settlement.settle(id, { actor: 'buyer', via: 'zero-amount invoice' })
      return { invoiceId: id, checkoutUrl: null }
    }
    let checkout
    try {
      checkout = await this.checkoutAt(provider, id, o, signal)
    } catch (err) {
      this.deps.settlement.markUnpaid(id, 'invalid', { actor: 'system', via: `${provider.kind} checkout failed` })
      throw err
    }
    db.prepare('UPDATE invoices SET provider_invoice_id = ?, checkout_url = ?, updated_at = ? WHERE id = ?').run(
      checkout.providerInvoiceId,
      checkout.checkoutUrl,
      clock.now(),
      id,
    )
    return { invoiceId: id, checkoutUrl: checkout.checkoutUrl }
  }

  /**
   * Provider first (spec 001 §4.3 rule 3, for tier changes): the checkout is opened at the active
   * provider under a fresh invoice id, then the invoice with its checkout and `alsoInTransaction`
   * are written in one transaction, so a provider failure leaves nothing behind. A charge only.
   */
  async openAtProviderFirst(
    o: InvoiceOrder,
    signal?: AbortSignal,
  ): Promise<{ invoiceId: string; checkoutUrl: string; providerInvoiceId: string }> {
    if (o.quote.amount_sats <= 0) throw new Error('a provider-first invoice needs a charge')
    const provider = this.activeProvider()
    const id = randomUUID()
    const checkout = await this.checkoutAt(provider, id, o, signal)
    try {
      immediate(this.deps.db, () => this.persistInvoice(id, o, provider.kind, this.deps.clock.now(), checkout))
    } catch (err) {
      // The provider's invoice is left unrecorded: nobody is sent to it, and it expires there unpaid.
      this.deps.logger.warn('invoice not recorded after its checkout opened', {
        invoice: id,
        provider: provider.kind,
        provider_invoice: checkout.providerInvoiceId,
      })
      throw err
    }
    return { invoiceId: id, checkoutUrl: checkout.checkoutUrl, providerInvoiceId: checkout.providerInvoiceId }
  }

  /** A redirect_url must be under the product's return prefix, the public URL, or REDIRECT_ALLOWLIST: never an open redirect. */
  assertRedirect(redirectUrl: string, productPrefix: string | null): void {
    assertRedirectAllowed(redirectUrl, {
      productPrefix,
      publicUrl: this.deps.publicUrl(),
      allowlist: this.deps.redirectAllowlist ?? [],
    })
  }

  private activeProvider(): PaymentProvider {
    const provider = this.deps.providers.active()
    if (!provider)
      throw new ApiError(
        'unavailable',
        'no payment provider is connected; the seller has to connect BTCPay Server or Zaprite',
      )
    return provider
  }

  /** The invoice row, its discount reservation and the order's own rows; inside the caller's transaction. */
  private persistInvoice(
    id: string,
    o: InvoiceOrder,
    provider: PaymentProvider['kind'] | 'free',
    now: number,
    checkout: CreatedCheckout | null,
  ): void {
    const { db, discounts } = this.deps
    const { quote } = o
    const audit = invoiceRateColumns(quote)
    db.prepare(
      `INSERT INTO invoices (id, kind, product_id, policy_id, provider, provider_invoice_id, checkout_url, amount_sats,
         status, discount_code_id, discount_value, buyer_email, buyer_note, redirect_url, listed_currency, listed_value,
         exchange_rate_centibps, exchange_rate_source, created_at, updated_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      id,
      o.kind,
      quote.product_id,
      quote.policy_id,
      provider,
      checkout?.providerInvoiceId ?? null,
      checkout?.checkoutUrl ?? null,
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
  }

  /** The checkout at `provider` for invoice `id`; a refusal is a 502 that says so (logged, never the credential). */
  private async checkoutAt(
    provider: PaymentProvider,
    id: string,
    o: InvoiceOrder,
    signal?: AbortSignal,
  ): Promise<CreatedCheckout> {
    const { quote } = o
    const product = this.deps.catalog.productRow(quote.product_id)
    const policy = this.deps.catalog.policyRow(quote.policy_id)
    try {
      return await provider.createCheckout(
        {
          localInvoiceId: id,
          amountSats: quote.amount_sats,
          listed: { currency: quote.listed_currency, value: quote.listed_value },
          redirectUrl: o.redirectUrl ?? this.thankYouUrl(id),
          label: o.label ?? `${product?.name ?? quote.product_slug} (${policy?.name ?? quote.policy_slug})`,
          buyerEmail: o.buyerEmail,
        },
        signal,
      )
    } catch (err) {
      this.deps.logger.warn('checkout creation failed', { invoice: id, provider: provider.kind, error: err })
      if (err instanceof ApiError)
        throw new ApiError(err.code, `could not open a checkout: ${err.message}`, { status: 502 })
      throw new ApiError('upstream_error', 'could not open a checkout at the payment provider')
    }
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
      // A zero total has no checkout (Keysat's empty string): its key comes inline below.
      checkout_url: inv.checkout_url ?? '',
      amount_sats: inv.amount_sats,
      base_price_sats: quote.base_price_sats,
      // Only a code discounts: a free trial answers 0, as Keysat does.
      discount_applied_sats: quote.discount_code_id ? Math.max(0, quote.base_price_sats - inv.amount_sats) : 0,
      listed_currency: asCurrency(inv.listed_currency),
      listed_value: inv.listed_value ?? inv.amount_sats,
      exchange_rate_centibps: inv.exchange_rate_centibps,
      exchange_rate_source: inv.exchange_rate_source,
      poll_url: `${this.deps.publicUrl()}/v1/purchase/${id}`,
      status: inv.status === 'settled' ? 'settled' : 'pending',
      expires_at: inv.expires_at === null ? null : iso(inv.expires_at),
      ...(inv.checkout_url === null ? this.inlineKey(id) : {}),
    }
  }

  /** A zero total's key, issued at once, as Keysat answers it inline. */
  private inlineKey(id: string): { license_key?: string; license_id?: string } {
    const p = this.poll(id)
    return p.license_key && p.license_id ? { license_key: p.license_key, license_id: p.license_id } : {}
  }

  /** `GET /v1/purchase/:id`: the invoice's state and, once settled, the license key. */
  poll(id: string): PurchaseStatus {
    const r = this.deps.db
      .prepare(
        `SELECT i.*, p.slug AS product_slug, pol.slug AS policy_slug, l.license_key AS license_key,
           l.status AS license_status
         FROM invoices i
         LEFT JOIN products p ON p.id = i.product_id
         LEFT JOIN policies pol ON pol.id = i.policy_id
         LEFT JOIN licenses l ON l.id = i.issued_license_id
         WHERE i.id = ?`,
      )
      .get(id) as
      | (InvoiceRow & {
          product_slug: string | null
          policy_slug: string | null
          license_key: string | null
          license_status: LicenseRow['status'] | null
        })
      | undefined
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
      // As Keysat: the key only while the license is active (not once revoked or suspended).
      license_key: r.status === 'settled' && r.license_status === 'active' ? r.license_key : null,
      license_id: r.status === 'settled' ? r.issued_license_id : null,
      expires_at: r.expires_at === null ? null : iso(r.expires_at),
      settled_at: r.settled_at === null ? null : iso(r.settled_at),
    }
  }
}
