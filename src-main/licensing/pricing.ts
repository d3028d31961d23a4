/**
 * Prices a product tier for a buyer: the tier's listed currency and value (policy overrides, NULL
 * inheriting the product's), a discount code applied in its own currency, then conversion to sats
 * at the current rate, rounded up so the buyer is never undercharged. SAT and BTC are both counted
 * in sats and convert as the identity, with no rate.
 *
 * An amount-off discount in another currency than the tier's is converted into the tier's currency
 * at the current rate, rounded down (in the seller's favour). A set price is converted to sats once,
 * straight from the code's own currency (rounded up), so a 5,000-sat code charges exactly 5,000 sats
 * on a USD tier; the tier-currency figure beside it is derived from those sats.
 * Errors: not_found (product/tier), the discount codes' errors, rate_unavailable (503).
 */
import type { Currency, DiscountPreview, Quote } from '../contract/licensing'
import { ApiError } from '../contract/errors'
import { type Catalog, effectivePrice, isSatsCurrency, type PolicyRow, type ProductRow } from './productCatalog'
import type { DiscountRow, Discounts } from './discounts'
import type { ListedPrice } from './providers/types'
import { fiatToSats, satsToFiat, type FiatCurrency, type Rate, type RateService } from './rates'

/** A quote with the undiscounted price in sats beside it (the purchase answer's `base_price_sats`). */
export type PricedQuote = Quote & { base_price_sats: number }

/** The tier's price after any discount code, and which code (null: none). */
interface DiscountedPrice {
  value: number
  amountSats: number
  discountId: string | null
  discountCode: string | null
}

export class Pricing {
  constructor(
    private readonly catalog: Catalog,
    private readonly discounts: Discounts,
    private readonly rates: RateService,
  ) {}

  /**
   * The quote of a charge against a license's tier, in the tier's listed currency, converted to
   * sats at the current rate (rounded up); no code applies. Tier changes and bought top-ups.
   */
  async charge(product: ProductRow, policy: PolicyRow, charge: number): Promise<Quote> {
    const currency = effectivePrice(product, policy).currency
    const sats = await this.convert(charge, currency, 'SAT', 'up')
    return {
      product_id: product.id,
      product_slug: product.slug,
      policy_id: policy.id,
      policy_slug: policy.slug,
      listed_currency: currency,
      base_value: charge,
      discount_code_id: null,
      discount_code: null,
      discount_value: 0,
      listed_value: charge,
      amount_sats: sats.value,
      exchange_rate_centibps: sats.rate?.centibps ?? null,
      exchange_rate_source: sats.rate?.source ?? null,
      free: charge === 0,
    }
  }

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

  /** Minor units of `currency` → sats, rounded up; fetches a rate when none is cached (503 when no source answers). */
  async toSats(value: number, currency: Currency): Promise<{ sats: number; rate: Rate | null }> {
    // Zero is zero in every currency: a free tier never waits for a rate.
    if (isSatsCurrency(currency) || value === 0) return { sats: value, rate: null }
    const rate = await this.rates.rate(currency as FiatCurrency)
    return { sats: fiatToSats(value, rate.centibps), rate }
  }

  async quote(q: {
    productSlug: string
    policy?: string | null
    code?: string | null
    includeHidden?: boolean
  }): Promise<PricedQuote> {
    const product = this.catalog.productBySlug(q.productSlug)
    if (!product || (product.active !== 1 && !q.includeHidden))
      throw new ApiError('not_found', `no product ${q.productSlug}`)
    const policy = this.catalog.resolvePolicy(product, q.policy)
    if (policy.public !== 1 && !q.includeHidden)
      throw new ApiError('not_found', `product ${product.slug} has no tier ${policy.slug}`)
    const listed = effectivePrice(product, policy)
    const base = await this.toSats(listed.value, listed.currency)
    const discounted =
      q.code && q.code.trim() !== ''
        ? await this.applyCode(q.code, product, policy, listed, base.sats)
        : { value: listed.value, amountSats: base.sats, discountId: null, discountCode: null }
    const rate = isSatsCurrency(listed.currency) ? null : base.rate
    return {
      product_id: product.id,
      product_slug: product.slug,
      policy_id: policy.id,
      policy_slug: policy.slug,
      listed_currency: listed.currency,
      base_value: listed.value,
      discount_code_id: discounted.discountId,
      discount_code: discounted.discountCode,
      discount_value: listed.value - discounted.value,
      listed_value: discounted.value,
      amount_sats: discounted.amountSats,
      base_price_sats: base.sats,
      exchange_rate_centibps: rate?.centibps ?? null,
      exchange_rate_source: rate?.source ?? null,
      free: discounted.amountSats === 0,
    }
  }

  /** The price after a discount code, in the tier's currency and in sats; free-license codes are refused. */
  private async applyCode(
    code: string,
    product: ProductRow,
    policy: PolicyRow,
    listed: ListedPrice,
    baseSats: number,
  ): Promise<DiscountedPrice> {
    const d = this.discounts.check(code, product, policy)
    if (d.kind === 'free_license')
      throw new ApiError('discount_wrong_kind', `code ${d.code} is a free license: redeem it at /v1/redeem`, {
        status: 400,
      })
    const applied = { discountId: d.id, discountCode: d.code }
    if (d.kind === 'set_price') {
      const set = await this.setPrice(d.value, d.discount_currency, listed, baseSats)
      return { value: set.value, amountSats: set.sats, ...applied }
    }
    const value = await this.reducedValue(d, listed)
    // An unchanged price keeps the sats already computed: no second rate lookup.
    const amountSats = value === listed.value ? baseSats : (await this.toSats(value, listed.currency)).sats
    return { value, amountSats, ...applied }
  }

  /** A percent or amount-off code's price in the tier's currency; an amount off in another currency rounds down. */
  private async reducedValue(d: DiscountRow, listed: ListedPrice): Promise<number> {
    if (d.kind === 'percent') return listed.value - Math.floor((listed.value * d.value) / 100)
    const off = await this.convert(d.value, d.discount_currency, listed.currency, 'down')
    return Math.max(0, listed.value - off.value)
  }

  /** `POST /v1/discount-codes/preview`: the quote a purchase with this code would get, nothing reserved. */
  async preview(q: { productSlug: string; policy?: string | null; code: string }): Promise<DiscountPreview> {
    const product = this.catalog.productBySlug(q.productSlug)
    if (!product || product.active !== 1) throw new ApiError('not_found', `no product ${q.productSlug}`)
    const policy = this.catalog.resolvePolicy(product, q.policy)
    if (policy.public !== 1) throw new ApiError('not_found', `product ${product.slug} has no tier ${policy.slug}`)
    const d = this.discounts.check(q.code, product, policy)
    if (d.kind === 'free_license') {
      const listed = effectivePrice(product, policy)
      const base = await this.toSats(listed.value, listed.currency)
      return {
        product: product.slug,
        policy_slug: policy.slug,
        code: d.code,
        kind: d.kind,
        listed_currency: listed.currency,
        base_value: listed.value,
        discount_value: listed.value,
        listed_value: 0,
        base_price_sats: base.sats,
        discount_applied_sats: base.sats,
        amount_sats: 0,
        free: true,
      }
    }
    const quote = await this.quote(q)
    return {
      product: quote.product_slug,
      policy_slug: quote.policy_slug,
      code: d.code,
      kind: d.kind,
      listed_currency: quote.listed_currency,
      base_value: quote.base_value,
      discount_value: quote.discount_value,
      listed_value: quote.listed_value,
      base_price_sats: quote.base_price_sats,
      discount_applied_sats: quote.base_price_sats - quote.amount_sats,
      amount_sats: quote.amount_sats,
      free: quote.free,
    }
  }

  /**
   * A set-price code: its amount in sats, rounded once from the code's own currency; never above
   * the listed price. The listed-currency figure is the code's value when the currencies match,
   * else derived from those sats (rounded up).
   */
  private async setPrice(
    codeValue: number,
    codeCurrency: Currency,
    listed: { currency: Currency; value: number },
    baseSats: number,
  ): Promise<{ value: number; sats: number }> {
    const sameUnit =
      codeCurrency === listed.currency || (isSatsCurrency(codeCurrency) && isSatsCurrency(listed.currency))
    if (sameUnit && codeValue >= listed.value) return { value: listed.value, sats: baseSats }
    const { sats } = await this.toSats(codeValue, codeCurrency)
    if (sats >= baseSats) return { value: listed.value, sats: baseSats }
    if (sameUnit) return { value: codeValue, sats }
    if (isSatsCurrency(listed.currency)) return { value: sats, sats }
    const rate = await this.rates.rate(listed.currency as FiatCurrency)
    return { value: Math.min(listed.value, satsToFiat(sats, rate.centibps, 'up')), sats }
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
