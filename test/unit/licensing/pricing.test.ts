import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ProductInput, PolicyInput, DiscountInput } from '../../../src-main/contract/licensing'
import { fiatToSats, toCentibps } from '../../../src-main/licensing/rates'
import { invoiceRateColumns } from '../../../src-main/licensing/pricing'
import { FakeRateSources } from '../../fakes/rates'
import { DAY, licensingFixture } from './fixture'

const fake = new FakeRateSources()
beforeAll(async () => {
  await fake.start()
})
afterAll(async () => {
  await fake.stop()
})

function setup() {
  const f = licensingFixture(fake.urls)
  const product = (input: Partial<ProductInput> & { slug: string }) =>
    f.catalog.createProduct(ProductInput.parse({ name: input.slug, ...input }))
  const policy = (productId: string, input: Partial<PolicyInput> & { slug: string }) =>
    f.catalog.createPolicy(productId, PolicyInput.parse({ name: input.slug, ...input }))
  const code = (input: Partial<DiscountInput> & { code: string; kind: DiscountInput['kind'] }) =>
    f.discounts.create(DiscountInput.parse(input))
  return { f, product, policy, code }
}

const usdRate = () => toCentibps(fake.kraken.rates.USD.toFixed(5))

describe('catalog', () => {
  it('creates a product with a default tier and keeps legacy sats prices in sync', () => {
    const { f, product, policy } = setup()
    const p = product({ slug: 'app', price_value: 5000 })
    expect(p).toMatchObject({ price_currency: 'SAT', price_value: 5000, price_sats: 5000 })
    const { policies } = f.catalog.getProduct(p.id)
    expect(policies.map((x) => x.slug)).toEqual(['default'])
    const pro = policy(p.id, { slug: 'pro', tier_rank: 2, price_value_override: 9000 })
    expect(pro).toMatchObject({ price_currency: 'SAT', price_value: 9000, price_sats_override: 9000 })
    // Switching the product to USD: the override keeps its own currency (pinned to SAT), never repriced as cents.
    const usd = f.catalog.updateProduct(p.id, { price_currency: 'USD', price_value: 1999 })
    expect(usd).toMatchObject({ price_sats: 0, price_value: 1999 })
    expect(f.catalog.getPolicy(pro.id)).toMatchObject({
      price_currency: 'SAT',
      price_currency_override: 'SAT',
      price_value: 9000,
      price_sats_override: 9000,
    })
    // A currency override without a value is refused; with one, it applies.
    expect(() =>
      f.catalog.updatePolicy(pro.id, { price_currency_override: 'EUR', price_value_override: null }),
    ).toThrow(/needs a price_value_override/)
    expect(
      f.catalog.updatePolicy(pro.id, { price_currency_override: 'BTC', price_value_override: 150_000 }),
    ).toMatchObject({
      price_currency: 'BTC',
      price_sats_override: 150_000,
    })
  })

  it('orders the tier ladder best first and refuses duplicate slugs, unknown entitlements and deleting used items', () => {
    const { f, product, policy } = setup()
    const p = product({ slug: 'ladder', entitlements_catalog: [{ slug: 'pro', name: 'Pro', description: '' }] })
    policy(p.id, { slug: 'basic', tier_rank: 1 })
    policy(p.id, { slug: 'pro', tier_rank: 3, entitlements: ['pro'] })
    policy(p.id, { slug: 'plus', tier_rank: 2 })
    expect(f.catalog.listPolicies(p.id).map((x) => x.slug)).toEqual(['pro', 'plus', 'basic', 'default'])
    expect(() => policy(p.id, { slug: 'pro' })).toThrow(/already has a tier pro/)
    expect(() => policy(p.id, { slug: 'odd', entitlements: ['teleport'] })).toThrow(
      /not in the product's catalog: teleport/,
    )
    expect(() => product({ slug: 'ladder' })).toThrow(/exists/)
    const basic = f.catalog.policyBySlug(p.id, 'basic')!
    f.licenses.issuing.issue({ product: f.catalog.productRow(p.id)!, policy: basic, source: 'complimentary' })
    expect(() => f.catalog.deletePolicy(basic.id)).toThrow(/deactivate it instead/)
    expect(() => f.catalog.deleteProduct(p.id)).toThrow(/deactivate it instead/)
    const unused = product({ slug: 'unused' })
    f.catalog.deleteProduct(unused.id)
    expect(f.catalog.productRow(unused.id)).toBeUndefined()
  })
})

describe('pricing', () => {
  it('SAT and BTC price as the identity with no rate; the invoice audit columns are NULL for SAT', async () => {
    const { f, product, policy } = setup()
    const p = product({ slug: 'sats', price_value: 21_000 })
    const q = await f.pricing.quote({ productSlug: 'sats' })
    expect(q).toMatchObject({
      listed_currency: 'SAT',
      listed_value: 21_000,
      amount_sats: 21_000,
      exchange_rate_centibps: null,
      exchange_rate_source: null,
    })
    expect(invoiceRateColumns(q)).toEqual({
      listed_currency: null,
      listed_value: null,
      exchange_rate_centibps: null,
      exchange_rate_source: null,
    })
    policy(p.id, { slug: 'btc', price_currency_override: 'BTC', price_value_override: 50_000 })
    const b = await f.pricing.quote({ productSlug: 'sats', policy: 'btc' })
    expect(b).toMatchObject({ listed_currency: 'BTC', amount_sats: 50_000, exchange_rate_centibps: null })
  })

  it('converts fiat at the current rate, rounded up, with the audit fields', async () => {
    const { f, product } = setup()
    product({ slug: 'usd', price_currency: 'USD', price_value: 1999 })
    const q = await f.pricing.quote({ productSlug: 'usd' })
    expect(q).toMatchObject({
      listed_currency: 'USD',
      listed_value: 1999,
      amount_sats: fiatToSats(1999, usdRate()),
      exchange_rate_centibps: usdRate(),
      exchange_rate_source: 'kraken',
    })
    expect(invoiceRateColumns(q)).toEqual({
      listed_currency: 'USD',
      listed_value: 1999,
      exchange_rate_centibps: usdRate(),
      exchange_rate_source: 'kraken',
    })
  })

  it('refuses a fiat price when no rate is available', async () => {
    const { f, product } = setup()
    product({ slug: 'eur', price_currency: 'EUR', price_value: 500 })
    fake.kraken.failWith = 500
    fake.coinbase.failWith = 500
    fake.coingecko.failWith = 500
    try {
      await expect(f.pricing.quote({ productSlug: 'eur' })).rejects.toMatchObject({
        code: 'rate_unavailable',
        status: 503,
      })
    } finally {
      fake.kraken.failWith = null
      fake.coinbase.failWith = null
      fake.coingecko.failWith = null
    }
  })

  it('applies discounts in their own currency', async () => {
    const { f, product, code } = setup()
    product({ slug: 'usd', price_currency: 'USD', price_value: 10_000 })
    product({ slug: 'sat', price_value: 100_000 })
    code({ code: 'TENOFF', kind: 'percent', value: 10 })
    code({ code: 'FIVEBUCKS', kind: 'fixed_sats', value: 500, discount_currency: 'USD' })
    code({ code: 'SATSOFF', kind: 'fixed_sats', value: 10_000 })
    code({ code: 'FLAT', kind: 'set_price', value: 2500, discount_currency: 'USD' })
    expect(await f.pricing.quote({ productSlug: 'usd', code: 'tenoff' })).toMatchObject({
      listed_value: 9000,
      discount_value: 1000,
      discount_code: 'TENOFF',
    })
    expect(await f.pricing.quote({ productSlug: 'usd', code: 'FIVEBUCKS' })).toMatchObject({ listed_value: 9500 })
    expect(await f.pricing.quote({ productSlug: 'sat', code: 'SATSOFF' })).toMatchObject({
      listed_value: 90_000,
      amount_sats: 90_000,
    })
    // 10,000 sats off a USD price: converted to cents at the rate, rounded down (seller's favour).
    const off = Math.floor((10_000 * usdRate()) / 1e10)
    expect(await f.pricing.quote({ productSlug: 'usd', code: 'SATSOFF' })).toMatchObject({
      listed_value: 10_000 - off,
      discount_value: off,
    })
    // A USD set price on a SAT product: $25 in sats, rounded up.
    expect(await f.pricing.quote({ productSlug: 'sat', code: 'FLAT' })).toMatchObject({
      listed_value: fiatToSats(2500, usdRate()),
    })
    expect(await f.pricing.quote({ productSlug: 'usd', code: 'FLAT' })).toMatchObject({
      listed_value: 2500,
      amount_sats: fiatToSats(2500, usdRate()),
    })
  })

  it('discount codes: expired, capped out, other product, other tier, wrong kind, unknown', async () => {
    const { f, product, policy, code } = setup()
    const a = product({ slug: 'a', price_value: 1000 })
    product({ slug: 'b', price_value: 1000 })
    const pro = policy(a.id, { slug: 'pro' })
    code({ code: 'OLD', kind: 'percent', value: 50, expires_at: f.clock.now() + DAY })
    const capped = code({ code: 'ONCE', kind: 'percent', value: 50, max_redemptions: 1 })
    code({ code: 'AONLY', kind: 'percent', value: 50, product_id: a.id })
    code({ code: 'PROONLY', kind: 'percent', value: 50, product_id: a.id, policy_id: pro.id })
    code({ code: 'GIFT', kind: 'free_license' })
    expect(await f.pricing.quote({ productSlug: 'a', code: 'OLD' })).toMatchObject({ listed_value: 500 })
    f.clock.advance(DAY)
    await expect(f.pricing.quote({ productSlug: 'a', code: 'OLD' })).rejects.toMatchObject({
      code: 'discount_expired',
      status: 400,
      message: expect.stringMatching(/expired/),
    })
    // One pending reservation uses up the cap; a cancelled one frees it again.
    const invoice = randomUUID()
    f.db
      .prepare(`INSERT INTO invoices (id, product_id, amount_sats, created_at, updated_at) VALUES (?, ?, 500, 0, 0)`)
      .run(invoice, a.id)
    f.discounts.reserve({ codeId: capped.id, invoiceId: invoice, listedCurrency: 'SAT', discountValue: 500 })
    await expect(f.pricing.quote({ productSlug: 'a', code: 'ONCE' })).rejects.toMatchObject({
      code: 'discount_exhausted',
      status: 409,
      message: expect.stringMatching(/used up/),
    })
    expect(() =>
      f.discounts.reserve({ codeId: capped.id, invoiceId: invoice, listedCurrency: 'SAT', discountValue: 500 }),
    ).toThrow(/used up/)
    f.discounts.release(invoice)
    expect(await f.pricing.quote({ productSlug: 'a', code: 'ONCE' })).toMatchObject({ listed_value: 500 })
    await expect(f.pricing.quote({ productSlug: 'b', code: 'AONLY' })).rejects.toMatchObject({
      code: 'discount_not_applicable',
      message: expect.stringMatching(/not valid for b/),
    })
    await expect(f.pricing.quote({ productSlug: 'a', code: 'PROONLY' })).rejects.toMatchObject({
      code: 'discount_not_applicable',
    })
    expect(await f.pricing.quote({ productSlug: 'a', policy: 'pro', code: 'PROONLY' })).toMatchObject({
      listed_value: 500,
    })
    await expect(f.pricing.quote({ productSlug: 'a', code: 'GIFT' })).rejects.toMatchObject({
      code: 'discount_wrong_kind',
    })
    await expect(f.pricing.quote({ productSlug: 'a', code: 'NOPE' })).rejects.toMatchObject({
      code: 'discount_not_found',
      status: 404,
    })
    await expect(f.pricing.quote({ productSlug: 'zzz' })).rejects.toMatchObject({ code: 'not_found' })
    await expect(f.pricing.quote({ productSlug: 'a', policy: 'gold' })).rejects.toMatchObject({ code: 'not_found' })
    // Settling the reservation counts the use.
    const inv2 = randomUUID()
    f.db
      .prepare(`INSERT INTO invoices (id, product_id, amount_sats, created_at, updated_at) VALUES (?, ?, 500, 0, 0)`)
      .run(inv2, a.id)
    f.discounts.reserve({ codeId: capped.id, invoiceId: inv2, listedCurrency: 'SAT', discountValue: 500 })
    const lic = f.licenses.issuing.issue({
      product: f.catalog.productRow(a.id)!,
      policy: f.catalog.resolvePolicy(f.catalog.productRow(a.id)!),
      source: 'purchase',
      invoiceId: inv2,
    })
    f.discounts.markRedeemed(inv2, lic.license.id)
    expect(f.discounts.view(f.discounts.byCode('ONCE')!)).toMatchObject({ redemption_count: 1, pending_count: 0 })
    expect(() => f.discounts.remove(capped.id)).toThrow(/deactivate it instead/)
  })
})
