/**
 * Prices a product tier for a buyer: the tier's listed currency and value (policy overrides, NULL
 * inheriting the product's), a discount code applied in its own currency, then conversion to sats
 * at the current rate, rounded up so the buyer is never undercharged. SAT and BTC are both counted
 * in sats and convert as the identity, with no rate.
 *
 * A discount in another currency than the tier's is converted into the tier's currency at the
 * current rate, rounded in the seller's favour (an amount off rounds down, a set price rounds up).
 * Errors: not_found (product/tier), the discount codes' errors, rate_unavailable (503).
 */
import type { Currency, Quote } from '../contract/licensing'
import { ApiError } from '../contract/errors'
import { type Catalog, effectivePrice, isSatsCurrency } from './catalog'
import type { Discounts } from './discounts'
import { fiatToSats, satsToFiat, type FiatCurrency, type Rate, type RateService } from './rates'

export class Pricing {
  constructor(
    private readonly catalog: Catalog,
    private readonly discounts: Discounts,
    private readonly rates: RateService,
  ) {}

  /** Converts an amount between currencies (minor units); fiat↔fiat goes through sats. */
  async convert(
    value: number,
    from: Currency,
    to: Currency,
    round: 'down' | 'up',
  ): Promise<{ value: number; rate: Rate | null }> {
    if (from === to || (isSatsCurrency(from) && isSatsCurrency(to))) return { value, rate: null }
    let sats = value
    let rate: Rate | null = null
    if (!isSatsCurrency(from)) {
      rate = await this.rates.rate(from as FiatCurrency)
      // Sats from fiat: round in the requested direction.
      sats =
        round === 'up'
          ? fiatToSats(value, rate.centibps)
          : Number((BigInt(value) * 10_000_000_000n) / BigInt(rate.centibps))
    }
    if (isSatsCurrency(to)) return { value: sats, rate }
    const toRate = await this.rates.rate(to as FiatCurrency)
    return { value: satsToFiat(sats, toRate.centibps, round), rate: toRate }
  }

  async quote(q: {
    productSlug: string
    policy?: string | null
    code?: string | null
    includeHidden?: boolean
  }): Promise<Quote> {
    const product = this.catalog.productBySlug(q.productSlug)
    if (!product || (product.active !== 1 && !q.includeHidden))
      throw new ApiError('not_found', `no product ${q.productSlug}`)
    const policy = this.catalog.resolvePolicy(product, q.policy)
    if (policy.public !== 1 && !q.includeHidden)
      throw new ApiError('not_found', `product ${product.slug} has no tier ${policy.slug}`)
    const listed = effectivePrice(product, policy)
    let value = listed.value
    let discountId: string | null = null
    let discountCode: string | null = null
    if (q.code && q.code.trim() !== '') {
      const d = this.discounts.check(q.code, product, policy)
      if (d.kind === 'free_license')
        throw new ApiError('discount_wrong_kind', `code ${d.code} is a free license: redeem it at /v1/redeem`, {
          status: 400,
        })
      discountId = d.id
      discountCode = d.code
      if (d.kind === 'percent') {
        value = listed.value - Math.floor((listed.value * d.value) / 100)
      } else if (d.kind === 'fixed_sats') {
        const off = await this.convert(d.value, d.discount_currency, listed.currency, 'down')
        value = Math.max(0, listed.value - off.value)
      } else {
        const price = await this.convert(d.value, d.discount_currency, listed.currency, 'up')
        value = Math.min(listed.value, price.value)
      }
    }
    let amountSats = value
    let rate: Rate | null = null
    if (!isSatsCurrency(listed.currency) && value > 0) {
      rate = await this.rates.rate(listed.currency as FiatCurrency)
      amountSats = fiatToSats(value, rate.centibps)
    }
    return {
      product_id: product.id,
      product_slug: product.slug,
      policy_id: policy.id,
      policy_slug: policy.slug,
      listed_currency: listed.currency,
      base_value: listed.value,
      discount_code_id: discountId,
      discount_code: discountCode,
      discount_value: listed.value - value,
      listed_value: value,
      amount_sats: amountSats,
      exchange_rate_centibps: rate?.centibps ?? null,
      exchange_rate_source: rate?.source ?? null,
      free: value === 0,
    }
  }
}

/** The invoice's four audit columns (spec 001 §2.3): filled for fiat and BTC listings, NULL for SAT. */
export function invoiceRateColumns(q: Quote): {
  listed_currency: Currency | null
  listed_value: number | null
  exchange_rate_centibps: number | null
  exchange_rate_source: string | null
} {
  if (q.listed_currency === 'SAT')
    return { listed_currency: null, listed_value: null, exchange_rate_centibps: null, exchange_rate_source: null }
  return {
    listed_currency: q.listed_currency,
    listed_value: q.listed_value,
    exchange_rate_centibps: q.exchange_rate_centibps,
    exchange_rate_source: q.exchange_rate_source,
  }
}
