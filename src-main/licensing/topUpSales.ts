/**
 * A buyer's bought top-up (issue 45): the top-up pack of an access license's tier, paid like any
 * purchase, adds its tokens to the license's current period once the invoice settles, at once and
 * even over quota. The price is always the catalog's (the tier's pack, in the tier's currency,
 * converted at the current rate); a client never supplies one. The tokens are fixed when the
 * invoice opens (`access_top_up_orders`), so a pack changed meanwhile gives what was paid for.
 */
import type { Handlers } from '../contract/define'
import type { AccessTopUpPack, Currency, licensingBuyerContract, TopUpInput, TopUpStarted } from '../contract/licensing'
import { ApiError } from '../contract/errors'
import { parseAccess } from './json'
import type { InvoiceRow } from './invoices'
import type { LicenseRow } from './licenses'
import { emitEvent } from './outboundEvents'
import { effectivePrice, type PolicyRow, type ProductRow } from './productCatalog'
import type { LicenseChargeDeps } from './purchase'
import type { SettleBranch } from './settlement'

/** The pack a license may buy now, with its price in the tier's currency. */
export interface TopUpOffer {
  tokens: number
  currency: Currency
  value: number
}

interface Offer {
  product: ProductRow
  policy: PolicyRow
  pack: AccessTopUpPack
}

interface OrderRow {
  invoice_id: string
  license_id: string
  tokens: number
}

export class TopUpSales {
  constructor(private readonly deps: LicenseChargeDeps) {}

  private get db() {
    return this.deps.services.db
  }

  /**
   * The license's tier's pack, when the license stands on a tier that sells one; throws saying
   * why not otherwise (409).
   */
  private offer(license: LicenseRow): Offer {
    const { catalog, licenses } = this.deps.services
    const checked = licenses.standing.check(license.id)
    if (checked.refusal !== null) throw new ApiError('conflict', `this license ${checked.refusal}`)
    const product = catalog.productRow(license.product_id)
    const policy = license.policy_id ? catalog.policyRow(license.policy_id) : undefined
    const pack = policy ? parseAccess(policy.access)?.top_up : null
    if (!product || !policy || !pack)
      throw new ApiError('conflict', `tier ${policy?.slug ?? '(none)'} sells no top-up: ask the seller`)
    return { product, policy, pack }
  }

  /** The pack the recover page offers under a license; null when it may not buy one now. */
  offerFor(licenseId: string): TopUpOffer | null {
    const license = this.deps.services.licenses.lookup.row(licenseId)
    if (!license || license.status !== 'active') return null
    try {
      const o = this.offer(license)
      return {
        tokens: o.pack.tokens,
        currency: effectivePrice(o.product, o.policy).currency,
        value: o.pack.price_value,
      }
    } catch (err) {
      if (err instanceof ApiError) return null
      throw err
    }
  }

  /**
   * `POST /v1/top-ups`: a revoked or suspended license's key gets the same 401 as any bad key (as
   * the upgrade's); an expired license or a tier without a pack is refused with 409. The checkout
   * is opened at the provider first, then the invoice and its order are written together.
   */
  async start(input: TopUpInput, signal?: AbortSignal): Promise<TopUpStarted> {
    const { license } = this.deps.services.licenses.keys.authenticateActive(input.license_key)
    const o = this.offer(license)
    if (input.redirect_url) this.deps.purchases.assertRedirect(input.redirect_url, o.product.return_url_prefix)
    const quote = await this.deps.services.pricing.charge(o.product, o.policy, o.pack.price_value)
    const tokens = o.pack.tokens
    const opened = await this.deps.purchases.openAtProviderFirst(
      {
        kind: 'top_up',
        quote,
        buyerEmail: license.buyer_email,
        buyerNote: null,
        redirectUrl: input.redirect_url ?? null,
        label: `${o.product.name}: ${tokens.toLocaleString('en')} more tokens`,
        alsoInTransaction: (invoiceId, now) =>
          this.db
            .prepare(
              'INSERT INTO access_top_up_orders (invoice_id, license_id, tokens, created_at) VALUES (?, ?, ?, ?)',
            )
            .run(invoiceId, license.id, tokens, now),
      },
      signal,
    )
    return {
      ok: true,
      license_id: license.id,
      invoice_id: opened.invoiceId,
      provider_invoice_id: opened.providerInvoiceId,
      checkout_url: opened.checkoutUrl,
      tokens,
      listed_currency: quote.listed_currency,
      listed_value: quote.listed_value,
      amount_sats: quote.amount_sats,
      poll_url: `${this.deps.publicUrl()}/v1/purchase/${opened.invoiceId}`,
    }
  }

  /** The tokens a top-up invoice bought; null when the invoice is no top-up. */
  tokensOf(invoiceId: string): number | null {
    const row = this.order(invoiceId)
    return row?.tokens ?? null
  }

  private order(invoiceId: string): OrderRow | undefined {
    return this.db.prepare('SELECT * FROM access_top_up_orders WHERE invoice_id = ?').get(invoiceId) as
      OrderRow | undefined
  }

  /**
   * The settle branch's work, inside the settle transaction: the paid tokens go into the period
   * the settlement falls in, once per invoice. Null when the invoice is no top-up.
   */
  applyForInvoice(invoice: InvoiceRow, now: number): { licenseId: string | null } | null {
    if (invoice.kind !== 'top_up') return null
    const order = this.order(invoice.id)
    // Never let a top-up invoice fall through to issuance: without its order it is a fault.
    if (!order) throw new Error(`top-up invoice ${invoice.id} has no order`)
    const added = this.deps.services.licenses.quotas.addPaidTopUp({
      licenseId: order.license_id,
      tokens: order.tokens,
      invoiceId: invoice.id,
      at: now,
    })
    if (added) {
      emitEvent(
        this.deps.outbox,
        'license.topped_up',
        {
          license_id: order.license_id,
          product_id: invoice.product_id,
          invoice_id: invoice.id,
          tokens: order.tokens,
          amount_sats: invoice.amount_sats,
          listed_currency: invoice.listed_currency,
          listed_value: invoice.listed_value,
          buyer_email: invoice.buyer_email,
        },
        now,
      )
    }
    return { licenseId: order.license_id }
  }
}

/** The bought top-up, a settle branch before issuance (a top-up invoice issues no license). */
export function topUpSettleBranch(topUps: TopUpSales): SettleBranch {
  return { name: 'top_up', apply: (invoice, now) => topUps.applyForInvoice(invoice, now) }
}

/** The buyer's `POST /v1/top-ups` (contract `licensingBuyerContract`); module.ts spreads it in. */
export function topUpHandlers(topUps: TopUpSales): Handlers<Pick<typeof licensingBuyerContract, 'licBuyTopUp'>> {
  return { licBuyTopUp: async (input, ctx) => topUps.start(input, ctx.signal) }
}
