import { describe, expect, it } from 'vitest'
import type { DiscountPreview, PurchaseStatus } from '../../../src-main/contract/licensing'
import { thankYouPage, thankYouState, type ThankYouModel } from '../../../src-main/licensing/pages/thankYou'
import { buyPage, type BuyPageModel, type BuyTier } from '../../../src-main/licensing/pages/views'
import { toCentibps } from '../../../src-main/licensing/rates'

/** Issue 31, findings 5 and 6: the thank-you page's states, and the buy page's discount preview and fiat line. */
const base: PurchaseStatus = {
  invoice_id: '0b7e9a52-3c1d-4f6a-9b2e-1d2c3b4a5f60',
  status: 'pending',
  product_id: 'p1',
  product_slug: 'notes',
  policy_slug: 'default',
  amount_sats: 50_000,
  listed_currency: 'SAT',
  listed_value: 50_000,
  checkout_url: 'https://pay.test/i/abc',
  license_key: null,
  license_id: null,
  expires_at: null,
  settled_at: null,
}
const model = (over: Partial<ThankYouModel>): ThankYouModel => ({
  ...base,
  product_name: 'Notes Pro',
  buyer_email: 'ada@example.com',
  buyer_note: null,
  kind: 'purchase',
  ...over,
})
const h1 = (html: string) =>
  html
    .match(/<h1>([\s\S]*?)<\/h1>/)?.[1]
    ?.replace(/\s+/g, ' ')
    .trim()
const KEY = 'LIC1-AAAA-BBBB'

describe('thank-you page states', () => {
  it('waiting for payment: its own heading, polls, no thanks and no key wording', () => {
    const m = model({})
    expect(thankYouState(m)).toBe('waiting')
    const html = thankYouPage(m)
    expect(h1(html)).toBe('Waiting for your payment')
    expect(html).toContain('data-state="waiting"')
    expect(html).toContain('src="/buy/assets/pages.js"')
    expect(html).toContain('Back to the payment page')
    expect(html).not.toMatch(/thank you/i)
    expect(html).not.toMatch(/keep your key/i)
    expect(html).not.toContain('id="license-key"')
  })

  it('paid and issuing: "Payment received", polls for the key, no key shown yet', () => {
    const m = model({ status: 'settled', checkout_url: null, settled_at: '2026-11-27T10:00:00Z' })
    expect(thankYouState(m)).toBe('issuing')
    const html = thankYouPage(m)
    expect(h1(html)).toBe('Payment received')
    expect(html).toContain('data-state="issuing"')
    expect(html).toContain('being issued')
    expect(html).not.toMatch(/keep your key/i)
    expect(html).not.toContain('id="license-key"')
    expect(html).not.toContain('Back to the payment page')
  })

  it('issued: thanks, the key with a copy button, and "keep your key somewhere safe"', () => {
    const m = model({ status: 'settled', license_key: KEY, license_id: 'l1', checkout_url: null })
    expect(thankYouState(m)).toBe('issued')
    const html = thankYouPage(m)
    expect(h1(html)).toBe('Thank you for buying Notes Pro')
    expect(html).toContain(`<pre id="license-key" class="key">${KEY}</pre>`)
    expect(html).toContain('Copy key')
    expect(html).toContain('Keep your key somewhere safe')
    expect(html).toContain('data-state="issued"')
  })

  it('paid but the license is not active (revoked or suspended): no key, no thanks for buying', () => {
    const m = model({ status: 'settled', license_id: 'l1', checkout_url: null })
    expect(thankYouState(m)).toBe('paid')
    const html = thankYouPage(m)
    expect(h1(html)).toBe('Payment received')
    expect(html).not.toContain('id="license-key"')
    expect(html).not.toMatch(/keep your key/i)
    expect(html).not.toContain('src="/buy/assets/pages.js"')
  })

  it('a paid upgrade or renewal: applies to the license the buyer holds', () => {
    const html = thankYouPage(model({ status: 'settled', kind: 'upgrade', checkout_url: null }))
    expect(h1(html)).toBe('Payment received')
    expect(html).toContain('your key stays the same')
    expect(html).not.toContain('being issued')
  })

  for (const [status, heading] of [
    ['expired', 'This invoice expired'],
    ['invalid', 'This invoice is no longer valid'],
  ] as const) {
    it(`${status}: no thanks, no key wording, a link back to the product's buy page`, () => {
      const m = model({ status, checkout_url: null })
      expect(thankYouState(m)).toBe('closed')
      const html = thankYouPage(m)
      expect(h1(html)).toBe(heading)
      expect(html).toContain('data-state="closed"')
      expect(html).toMatch(/<a class="button" id="buy-again" href="\/buy\/notes">/)
      expect(html).not.toMatch(/thank you/i)
      expect(html).not.toMatch(/\bkey\b/i)
      expect(html).not.toContain('src="/buy/assets/pages.js"')
    })
  }

  it('escapes the product name and slug it links back to', () => {
    const html = thankYouPage(model({ status: 'expired', product_name: '<b>x</b>', product_slug: 'a"b' }))
    expect(html).not.toContain('<b>x</b>')
    expect(html).toContain('href="/buy/a&quot;b"')
  })
})

const tier = (over: Partial<BuyTier>): BuyTier => ({
  slug: 'default',
  name: 'Standard',
  description: '',
  currency: 'SAT',
  value: 50_000,
  entitlements: [],
  maxMachines: 1,
  durationDays: 0,
  isRecurring: false,
  renewalPeriodDays: 0,
  trialDays: 0,
  highlighted: false,
  ...over,
})
const buy = (over: Partial<BuyPageModel>): BuyPageModel => ({
  product: { slug: 'notes', name: 'Notes Pro', description: '' },
  tiers: [tier({}), tier({ slug: 'team', name: 'Team', value: 180_000, highlighted: true })],
  ...over,
})
const usd = { currency: 'USD' as const, centibps: toCentibps('100000'), choices: ['USD' as const, 'EUR' as const] }

describe('buy page: fiat equivalent and discount preview', () => {
  it('beside a sats price, "about" the cached fiat amount in the chosen currency', () => {
    // 50,000 sats at $100,000/BTC = $50.00.
    const html = buyPage(buy({ fiat: usd }))
    expect(html).toContain('about $50.00')
    expect(html).toContain('about $180.00')
    expect(html).toContain('href="/buy/notes?currency=EUR"')
  })

  it('no rate cached: no fiat line and no currency choice', () => {
    const html = buyPage(buy({ fiat: null }))
    expect(html).not.toContain('about $')
    expect(html).not.toContain('?currency=')
  })

  it('a fiat-priced tier shows its sats figure as "about"', () => {
    const html = buyPage(buy({ tiers: [tier({ currency: 'USD', value: 4900, sats: 49_000 })], fiat: usd }))
    expect(html).toContain('$49.00')
    expect(html).toContain('about 49,000 sats')
  })

  it('offers to apply a code without paying', () => {
    expect(buyPage(buy({}))).toMatch(/<button[^>]*name="intent" value="preview"[^>]*>Apply code<\/button>/)
  })

  it('a previewed code: the line names the code and the saving, and the price after it', () => {
    const preview: DiscountPreview = {
      product: 'notes',
      policy_slug: 'team',
      code: 'LAUNCH20',
      kind: 'percent',
      listed_currency: 'SAT',
      base_value: 180_000,
      discount_value: 36_000,
      listed_value: 144_000,
      base_price_sats: 180_000,
      discount_applied_sats: 36_000,
      amount_sats: 144_000,
      free: false,
    }
    const html = buyPage(buy({ preview, fiat: usd, form: { code: 'LAUNCH20', policy: 'team' } }))
    const box = html.match(/<div[^>]*id="discount-preview"[\s\S]*?<\/div>/)?.[0] ?? ''
    expect(box).toContain('LAUNCH20')
    expect(box).toContain('Team')
    expect(box).toContain('You save 36,000 sats')
    expect(box).toContain('144,000 sats')
    expect(box).toContain('about $144.00')
    expect(box).toContain('<s>180,000 sats</s>')
  })
})
