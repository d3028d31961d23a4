import { randomUUID } from 'node:crypto'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { DiscountInput, PolicyInput, ProductInput } from '../../../src-main/contract/licensing'
import { fiatToSats, toCentibps } from '../../../src-main/licensing/rates'
import { redirectRefusal } from '../../../src-main/licensing/redirects'
import { recoverByInvoice, sameEmail } from '../../../src-main/licensing/recovery'
import { FakeRateSources } from '../../fakes/rates'
import { licensingFixture } from './fixture'
import { paymentsHarness, type Harness } from './payments-harness'

const fake = new FakeRateSources()
beforeAll(async () => {
  await fake.start()
})
afterAll(async () => {
  await fake.stop()
})

const MIN = 60_000
const usdRate = () => toCentibps(fake.kraken.rates.USD.toFixed(5))

function fixture() {
  const f = licensingFixture(fake.urls)
  const product = (input: Partial<ProductInput> & { slug: string }) =>
    f.catalog.createProduct(ProductInput.parse({ name: input.slug, ...input }))
  const policy = (productId: string, input: Partial<PolicyInput> & { slug: string }) =>
    f.catalog.createPolicy(productId, PolicyInput.parse({ name: input.slug, ...input }))
  const code = (input: Partial<DiscountInput> & { code: string; kind: DiscountInput['kind'] }) =>
    f.discounts.create(DiscountInput.parse(input))
  return { f, product, policy, code }
}

describe('set_price codes and the undiscounted price in sats', () => {
  it('a 5,000-sat set price on a USD tier charges exactly 5,000 sats (one rounding)', async () => {
    const { f, product, code } = fixture()
    product({ slug: 'usd', price_currency: 'USD', price_value: 1999 })
    code({ code: 'FIVEK', kind: 'set_price', value: 5000, discount_currency: 'SAT' })
    const q = await f.pricing.quote({ productSlug: 'usd', code: 'FIVEK' })
    expect(q.amount_sats).toBe(5000)
    expect(q.base_price_sats).toBe(fiatToSats(1999, usdRate()))
    expect(q.listed_currency).toBe('USD')
    expect(q.listed_value).toBeLessThanOrEqual(1999)
    expect(q.listed_value).toBeGreaterThan(0)
  })

  it('a USD set price on a EUR tier is converted to sats once, from USD', async () => {
    const { f, product, code } = fixture()
    product({ slug: 'eur', price_currency: 'EUR', price_value: 5000 })
    code({ code: 'TENUSD', kind: 'set_price', value: 1000, discount_currency: 'USD' })
    const q = await f.pricing.quote({ productSlug: 'eur', code: 'TENUSD' })
    expect(q.amount_sats).toBe(fiatToSats(1000, usdRate()))
  })

  it('a set price above the listed price changes nothing', async () => {
    const { f, product, code } = fixture()
    product({ slug: 'cheap', price_value: 1000 })
    code({ code: 'BIG', kind: 'set_price', value: 9000 })
    expect(await f.pricing.quote({ productSlug: 'cheap', code: 'BIG' })).toMatchObject({
      amount_sats: 1000,
      base_price_sats: 1000,
      discount_value: 0,
    })
  })

  it('every discount kind on every currency: base and discount in sats add up, never negative', async () => {
    const { f, product, code } = fixture()
    const eurRate = toCentibps(fake.kraken.rates.EUR.toFixed(5))
    const sats = (currency: string, v: number) =>
      currency === 'USD' ? fiatToSats(v, usdRate()) : currency === 'EUR' ? fiatToSats(v, eurRate) : v
    const tiers = [
      ['t-sat', 'SAT', 40_000],
      ['t-btc', 'BTC', 40_000],
      ['t-usd', 'USD', 4000],
      ['t-eur', 'EUR', 4000],
    ] as const
    for (const [slug, currency, value] of tiers) product({ slug, price_currency: currency, price_value: value })
    const codes = [
      ['P25', 'percent', 25, 'SAT'],
      ['OFFSAT', 'fixed_sats', 5000, 'SAT'],
      ['OFFUSD', 'fixed_sats', 500, 'USD'],
      ['SETSAT', 'set_price', 7000, 'SAT'],
      ['SETUSD', 'set_price', 700, 'USD'],
      ['SETEUR', 'set_price', 700, 'EUR'],
    ] as const
    for (const [c, kind, value, currency] of codes) code({ code: c, kind, value, discount_currency: currency })
    for (const [slug, currency, value] of tiers) {
      for (const [c, kind, codeValue, codeCurrency] of codes) {
        const q = await f.pricing.quote({ productSlug: slug, code: c })
        const label = `${slug} ${c}`
        expect(q.base_price_sats, label).toBe(sats(currency, value))
        expect(q.amount_sats, label).toBeGreaterThan(0)
        expect(q.amount_sats, label).toBeLessThanOrEqual(q.base_price_sats)
        expect(q.discount_value, label).toBeGreaterThanOrEqual(0)
        if (kind === 'set_price') expect(q.amount_sats, label).toBe(sats(codeCurrency, codeValue))
        else expect(q.amount_sats, label).toBe(sats(currency, q.listed_value))
      }
    }
  })

  it('a free fiat tier never waits for a rate', async () => {
    const { f, product } = fixture()
    product({ slug: 'freeusd', price_currency: 'USD', price_value: 0 })
    for (const s of [fake.kraken, fake.coinbase, fake.coingecko]) s.failWith = 500
    try {
      expect(await f.pricing.quote({ productSlug: 'freeusd' })).toMatchObject({
        amount_sats: 0,
        base_price_sats: 0,
        free: true,
      })
    } finally {
      for (const s of [fake.kraken, fake.coinbase, fake.coingecko]) s.failWith = null
    }
  })

  it('preview prices a code without reserving a use', async () => {
    const { f, product, code } = fixture()
    product({ slug: 'app', price_value: 10_000 })
    code({ code: 'HALF', kind: 'percent', value: 50, max_redemptions: 1 })
    code({ code: 'GIFT', kind: 'free_license' })
    const p = await f.pricing.preview({ productSlug: 'app', code: 'half' })
    expect(p).toMatchObject({
      code: 'HALF',
      kind: 'percent',
      base_price_sats: 10_000,
      amount_sats: 5000,
      discount_applied_sats: 5000,
    })
    expect(f.discounts.view(f.discounts.byCode('HALF')!)).toMatchObject({ pending_count: 0 })
    expect(await f.pricing.preview({ productSlug: 'app', code: 'GIFT' })).toMatchObject({ amount_sats: 0, free: true })
    await expect(f.pricing.preview({ productSlug: 'app', code: 'NOPE' })).rejects.toMatchObject({
      code: 'discount_not_found',
    })
  })
})

/** A pending invoice for the product's default tier that used `codeId`, with its reservation. */
function openInvoice(h: Harness, productSlug: string, codeId: string | null): string {
  const { catalog, db, discounts } = h.services
  const product = catalog.productBySlug(productSlug)!
  const policy = catalog.resolvePolicy(product)
  const id = randomUUID()
  const now = h.clock.now()
  db.prepare(
    `INSERT INTO invoices (id, kind, product_id, policy_id, provider, amount_sats, status, discount_code_id, discount_value, created_at, updated_at, expires_at)
     VALUES (?, 'purchase', ?, ?, 'btcpay', 500, 'pending', ?, 500, ?, ?, ?)`,
  ).run(id, product.id, policy.id, codeId, now, now, now + 24 * 60 * MIN)
  if (codeId) discounts.reserve({ codeId, invoiceId: id, listedCurrency: 'SAT', discountValue: 500 })
  return id
}

describe('discount reservations and caps', () => {
  let h: Harness
  afterEach(async () => {
    await h?.close()
  })

  function setup(env: Record<string, string> = {}) {
    h = paymentsHarness({ env })
    h.services.catalog.createProduct({
      slug: 'app',
      name: 'App',
      description: '',
      price_currency: 'SAT',
      price_value: 1000,
      entitlements_catalog: [],
      active: true,
    })
    const code = h.services.discounts.create(
      DiscountInput.parse({ code: 'LAUNCH', kind: 'percent', value: 50, max_redemptions: 1 }),
    )
    return code.id
  }
  const view = () => h.services.discounts.view(h.services.discounts.byCode('LAUNCH')!)
  const quote = () => h.services.pricing.quote({ productSlug: 'app', code: 'LAUNCH' })

  it('an unpaid checkout holds its use for 30 minutes, then releases it', async () => {
    const codeId = setup()
    openInvoice(h, 'app', codeId)
    await expect(quote()).rejects.toMatchObject({ code: 'discount_exhausted' })
    h.clock.advance(29 * MIN)
    await expect(quote()).rejects.toMatchObject({ code: 'discount_exhausted' })
    h.clock.advance(MIN)
    expect(await quote()).toMatchObject({ listed_value: 500 })
    expect(view()).toMatchObject({ pending_count: 0, redemption_count: 0 })
  })

  it('DISCOUNT_RESERVATION_MINUTES sets the hold', async () => {
    const codeId = setup({ DISCOUNT_RESERVATION_MINUTES: '5' })
    openInvoice(h, 'app', codeId)
    h.clock.advance(4 * MIN)
    await expect(quote()).rejects.toMatchObject({ code: 'discount_exhausted' })
    h.clock.advance(MIN)
    expect(await quote()).toMatchObject({ listed_value: 500 })
  })

  it('a late payment after its reservation lapsed is counted and shown over cap with its invoice', async () => {
    const codeId = setup()
    const late = openInvoice(h, 'app', codeId)
    h.clock.advance(31 * MIN)
    const onTime = openInvoice(h, 'app', codeId)
    expect(h.payments.settlement.settle(onTime, { actor: 'provider', via: 'test' }).kind).toBe('issued')
    expect(view()).toMatchObject({ redemption_count: 1, over_cap_by: 0, over_cap_invoices: [] })
    expect(h.payments.settlement.settle(late, { actor: 'provider', via: 'test' }).kind).toBe('issued')
    expect(view()).toMatchObject({ redemption_count: 2, over_cap_by: 1, over_cap_invoices: [late] })
    const audit = h.services.audit.list({ limit: 50 }).find((e) => e.action === 'discount.over_cap')
    expect(audit?.details).toMatchObject({ code: 'LAUNCH', invoice_id: late })
  })

  it('a payment for an invoice expired locally still counts the use', async () => {
    const codeId = setup()
    const inv = openInvoice(h, 'app', codeId)
    expect(h.payments.settlement.markUnpaid(inv, 'expired', { actor: 'system', via: 'test' })).toBe(true)
    expect(view()).toMatchObject({ pending_count: 0, redemption_count: 0 })
    h.payments.settlement.settle(inv, { actor: 'provider', via: 'late payment' })
    // The cap was free again, so this late use is within it.
    expect(view()).toMatchObject({ redemption_count: 1, over_cap_by: 0 })
  })
})

describe('currency changes', () => {
  it('pin every inheriting tier override at its own currency, and the preview shows it first', () => {
    const { f, product, policy } = fixture()
    const p = product({ slug: 'app', price_value: 10_000 })
    const pro = policy(p.id, { slug: 'pro', name: 'Pro', price_value_override: 5000 })
    const eur = policy(p.id, { slug: 'eur', price_currency_override: 'EUR', price_value_override: 900 })
    const effect = f.catalog.previewProductChange(p.id, { price_currency: 'USD', price_value: 1999 })
    expect(effect.find((e) => e.slug === 'pro')).toMatchObject({
      name: 'Pro',
      before: { currency: 'SAT', value: 5000 },
      after: { currency: 'SAT', value: 5000 },
      pinned: true,
      changed: false,
    })
    expect(effect.find((e) => e.slug === 'default')).toMatchObject({
      before: { currency: 'SAT', value: 10_000 },
      after: { currency: 'USD', value: 1999 },
      pinned: false,
      changed: true,
    })
    expect(effect.find((e) => e.slug === 'eur')).toMatchObject({ pinned: false, changed: false })
    // The preview saved nothing.
    expect(f.catalog.getPolicy(pro.id)).toMatchObject({ price_currency_override: null, price_currency: 'SAT' })

    f.catalog.updateProduct(p.id, { price_currency: 'USD', price_value: 1999 })
    expect(f.catalog.getPolicy(pro.id)).toMatchObject({
      price_currency_override: 'SAT',
      price_currency: 'SAT',
      price_value: 5000,
      price_sats_override: 5000,
    })
    expect(f.catalog.getPolicy(eur.id)).toMatchObject({ price_currency: 'EUR', price_value: 900 })
    const updated = f.audit.list({ limit: 10 }).find((e) => e.action === 'product.update')
    expect(updated?.details).toMatchObject({ pinned_tiers: ['pro'] })
  })

  it('a value-only change pins nothing', () => {
    const { f, product, policy } = fixture()
    const p = product({ slug: 'v', price_value: 10_000 })
    const pro = policy(p.id, { slug: 'pro', price_value_override: 5000 })
    f.catalog.updateProduct(p.id, { price_value: 12_000 })
    expect(f.catalog.getPolicy(pro.id)).toMatchObject({ price_currency_override: null })
  })
})

describe('redirect allow-list', () => {
  const rules = {
    productPrefix: 'https://shop.example/thanks',
    publicUrl: 'https://tandem.example',
    allowlist: ['https://partner.example'],
  }
  it.each([
    ['https://shop.example/thanks', null],
    ['https://shop.example/thanks/order?x=1', null],
    ['https://tandem.example/thank-you?invoice=1', null],
    ['https://partner.example/anything', null],
    ['https://shop.example/thanksgiving', 'not an allowed return address'],
    ['https://shop.example.evil.test/thanks', 'not an allowed return address'],
    ['http://shop.example/thanks', 'not an allowed return address'],
    ['https://partner.example:8443/', 'not an allowed return address'],
    ['https://evil.test/', 'not an allowed return address'],
    ['https://user:pw@shop.example/thanks', 'user name or password'],
    ['javascript:alert(1)', 'http(s) URL'],
  ])('%s', (url, reason) => {
    const got = redirectRefusal(url, rules)
    if (reason === null) expect(got).toBeNull()
    else expect(got).toContain(reason)
  })
})

describe('recover by invoice and e-mail', () => {
  it('normalised e-mails compare equal; a missing one never matches', () => {
    expect(sameEmail('  Buyer@Example.COM ', 'buyer@example.com')).toBe(true)
    expect(sameEmail('buyer@example.com', 'other@example.com')).toBe(false)
    expect(sameEmail('buyer@example.com', null)).toBe(false)
  })

  it('answers the licence with names; a wrong e-mail and an unknown invoice fail the same way', () => {
    const { f, product, policy } = fixture()
    const p = product({ slug: 'notes', name: 'Notes Pro' })
    const gold = policy(p.id, { slug: 'gold', name: 'Gold tier' })
    const inv = randomUUID()
    f.db
      .prepare(
        `INSERT INTO invoices (id, product_id, policy_id, amount_sats, status, buyer_email, created_at, updated_at) VALUES (?, ?, ?, 0, 'settled', 'Buyer@Example.com', 0, 0)`,
      )
      .run(inv, p.id, gold.id)
    const { license } = f.licenses.issuing.issue({
      product: f.catalog.productRow(p.id)!,
      policy: f.catalog.policyRow(gold.id)!,
      source: 'purchase',
      invoiceId: inv,
    })
    f.db.prepare('UPDATE invoices SET issued_license_id = ? WHERE id = ?').run(license.id, inv)
    const ok = recoverByInvoice(f, inv, 'buyer@example.com ')
    expect(ok).toMatchObject({ license_id: license.id, product_name: 'Notes Pro', policy_name: 'Gold tier' })
    expect(ok.license_key).toMatch(/^LIC1-/)
    const fail = (id: string, email: string) => {
      try {
        recoverByInvoice(f, id, email)
      } catch (err) {
        const e = err as { status: number; code: string; message: string }
        return { status: e.status, code: e.code, message: e.message }
      }
      return null
    }
    const wrongEmail = fail(inv, 'someone@example.com')
    const unknown = fail(randomUUID(), 'buyer@example.com')
    expect(wrongEmail).toMatchObject({ status: 404, code: 'not_found' })
    expect(unknown).toEqual(wrongEmail)
  })
})
