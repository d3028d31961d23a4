import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fiatToSats, toCentibps } from '../../../src-main/licensing/rates'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { FakeBtcpay } from '../../fakes/btcpay'
import { FakeRateSources } from '../../fakes/rates'

let d: TestDaemon
let btcpay: FakeBtcpay
let rates: FakeRateSources

type Json = Record<string, unknown>
type Codes = { total: number; discounts: { id: string; pending_count: number }[] }
const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
const form = (url: string, fields: Record<string, string>) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  })

async function admin<T = Json>(path: string, method = 'GET', body?: unknown): Promise<T> {
  const res = await d.admin(path, { method, body: body === undefined ? undefined : JSON.stringify(body) })
  const out = (await res.json()) as T
  expect(res.status, JSON.stringify(out)).toBe(200)
  return out
}
const product = (body: Json) => admin<{ id: string }>('/v1/admin/products', 'POST', body)
const tier = (productId: string, body: Json) => admin(`/v1/admin/products/${productId}/policies`, 'POST', body)
const code = (body: Json) => admin<{ id: string }>('/v1/admin/discount-codes', 'POST', body)
const usdRate = () => toCentibps(rates.kraken.rates.USD.toFixed(5))

beforeAll(async () => {
  btcpay = await new FakeBtcpay().start()
  rates = await new FakeRateSources().start()
  d = await startDaemon({
    env: {
      ...rates.env,
      LICENSING_RATE_LIMIT: '0',
      PUBLIC_URL: 'https://tandem.shop.test',
      REDIRECT_ALLOWLIST: 'https://partner.test',
    },
  })
  btcpay.webhookUrl = `${d.url}/v1/btcpay/webhook`
  await admin('/v1/admin/btcpay/connect', 'POST', {
    base_url: btcpay.url,
    store_id: btcpay.storeId,
    api_key: btcpay.apiKey,
    webhook_secret: btcpay.webhookSecret,
  })
})

afterAll(async () => {
  await d?.stop()
  await Promise.all([btcpay?.stop(), rates?.stop()])
})

describe('prices on the wire', () => {
  it('a fresh daemon lists a USD tier in cents with base_price_sats fetched on demand, cheapest first', async () => {
    const p = await product({ slug: 'usdapp', name: 'USD App', price_currency: 'USD', price_value: 1999 })
    await tier(p.id, { slug: 'pro', name: 'Pro', tier_rank: 3, price_value_override: 4999 })
    await tier(p.id, { slug: 'plus', name: 'Plus', tier_rank: 2, price_value_override: 999 })
    await tier(p.id, { slug: 'basic', name: 'Basic', tier_rank: 1, price_value_override: 999 })
    await tier(p.id, {
      slug: 'sats',
      name: 'Sats',
      tier_rank: 4,
      price_currency_override: 'SAT',
      price_value_override: 50_000,
    })
    const res = await fetch(`${d.url}/v1/products/usdapp/policies`)
    const body = (await res.json()) as {
      product: { base_price_sats: number; price_currency: string }
      policies: { slug: string; price_sats: number; price_currency: string }[]
    }
    expect(res.status).toBe(200)
    expect(body.product.base_price_sats).toBe(fiatToSats(1999, usdRate()))
    // 50,000 sats is about $48.60 at the fake rate: between $19.99 and $49.99.
    expect(fiatToSats(4999, usdRate())).toBeGreaterThan(50_000)
    expect(body.policies.map((x) => x.slug)).toEqual(['basic', 'plus', 'default', 'sats', 'pro'])
    // The buy page lists them in the same order.
    const page = await (await fetch(`${d.url}/buy/usdapp`)).text()
    const order = [...page.matchAll(/name="policy" value="([a-z]+)"/g)].map((m) => m[1])
    expect(order).toEqual(['basic', 'plus', 'default', 'sats', 'pro'])
    expect(body.policies.find((x) => x.slug === 'default')).toMatchObject({ price_sats: 1999, price_currency: 'USD' })
    expect(body.policies.find((x) => x.slug === 'sats')).toMatchObject({ price_sats: 50_000, price_currency: 'SAT' })
  })

  it('no rate source answering: 503 with Retry-After, and the buy page says the price is unavailable', async () => {
    await product({ slug: 'euroapp', name: 'Euro App', price_currency: 'EUR', price_value: 900 })
    for (const s of [rates.kraken, rates.coinbase, rates.coingecko]) s.failWith = 500
    try {
      const res = await fetch(`${d.url}/v1/products/euroapp/policies`)
      expect(res.status).toBe(503)
      expect(res.headers.get('retry-after')).toBe('60')
      expect(((await res.json()) as Json).error).toBe('rate_unavailable')
      const page = await fetch(`${d.url}/buy/euroapp`)
      const html = await page.text()
      expect(page.status).toBe(200)
      expect(html).toContain('The price is temporarily unavailable')
      expect(html).toMatch(/<button type="submit"\s+disabled/)
      const buy = await form(`${d.url}/buy/euroapp`, { policy: 'default' })
      expect(buy.status).toBe(503)
      expect(buy.headers.get('retry-after')).toBe('60')
      expect(await buy.text()).toContain('The price is temporarily unavailable')
    } finally {
      for (const s of [rates.kraken, rates.coinbase, rates.coingecko]) s.failWith = null
    }
    expect((await fetch(`${d.url}/v1/products/euroapp/policies`)).status).toBe(200)
  })
})

describe('the purchase answer', () => {
  it('carries base_price_sats and discount_applied_sats; a zero total answers free-<uuid>', async () => {
    await product({ slug: 'satapp', name: 'Sat App', price_value: 10_000 })
    await code({ code: 'TENPC', kind: 'percent', value: 10 })
    await code({ code: 'ALLFREE', kind: 'percent', value: 100 })
    await code({ code: 'FIVEK', kind: 'set_price', value: 5000, discount_currency: 'SAT' })
    const r = await post(`${d.url}/v1/purchase`, { product: 'satapp', code: 'TENPC' })
    const paid = (await r.json()) as Json
    expect(r.status, JSON.stringify(paid)).toBe(200)
    expect(paid).toMatchObject({ amount_sats: 9000, base_price_sats: 10_000, discount_applied_sats: 1000 })
    expect(typeof paid.btcpay_invoice_id).toBe('string')

    const free = (await (await post(`${d.url}/v1/purchase`, { product: 'satapp', code: 'ALLFREE' })).json()) as Json
    expect(free).toMatchObject({ amount_sats: 0, base_price_sats: 10_000, discount_applied_sats: 10_000 })
    expect(free.btcpay_invoice_id).toBe(`free-${String(free.invoice_id)}`)
    expect(free.btcpay_invoice_id).toMatch(/^free-[0-9a-f-]{36}$/)

    const usd = (await (await post(`${d.url}/v1/purchase`, { product: 'usdapp', code: 'FIVEK' })).json()) as Json
    expect(usd).toMatchObject({ amount_sats: 5000, base_price_sats: fiatToSats(1999, usdRate()) })
    expect(usd.discount_applied_sats).toBe(fiatToSats(1999, usdRate()) - 5000)
  })

  it('preview prices a code without reserving it', async () => {
    const c = await code({ code: 'PREVIEW20', kind: 'percent', value: 20, max_redemptions: 1 })
    const res = await post(`${d.url}/v1/discount-codes/preview`, { product: 'satapp', code: 'preview20' })
    const out = (await res.json()) as Json
    expect(res.status, JSON.stringify(out)).toBe(200)
    expect(out).toMatchObject({
      amount_sats: 8000,
      base_price_sats: 10_000,
      discount_applied_sats: 2000,
      kind: 'percent',
    })
    const codes = await admin<Codes>('/v1/admin/discount-codes?q=PREVIEW20')
    expect(codes.discounts.find((x) => x.id === c.id)?.pending_count).toBe(0)
    const bad = await post(`${d.url}/v1/discount-codes/preview`, { product: 'satapp', code: 'NOPE' })
    expect(bad.status).toBe(404)
  })

  it('200 concurrent purchases of a 100-use code take exactly 100 reservations', async () => {
    const c = await code({ code: 'HUNDRED', kind: 'percent', value: 50, max_redemptions: 100 })
    // 200 requests racing, at most 100 connections open at once (the server allows 128 per address).
    const statuses: number[] = []
    let next = 0
    const worker = async () => {
      while (next < 200) {
        next++
        const res = await post(`${d.url}/v1/purchase`, { product: 'satapp', code: 'HUNDRED' })
        statuses.push(res.status)
        await res.body?.cancel()
      }
    }
    await Promise.all(Array.from({ length: 100 }, worker))
    expect(statuses).toHaveLength(200)
    expect(statuses.filter((s) => s === 200)).toHaveLength(100)
    expect(statuses.filter((s) => s === 409)).toHaveLength(100)
    const codes = await admin<Codes>('/v1/admin/discount-codes?q=HUNDRED')
    expect(codes.discounts.find((x) => x.id === c.id)?.pending_count).toBe(100)
  })
})

describe('redirect_url allow-list', () => {
  it('refuses an address off the allow-list with the reason; accepts the prefix, PUBLIC_URL and allow-listed origins', async () => {
    const p = await product({
      slug: 'redir',
      name: 'Redir',
      price_value: 1000,
      return_url_prefix: 'https://merchant.test/return',
    })
    const bad = await post(`${d.url}/v1/purchase`, { product: 'redir', redirect_url: 'https://phish.test/return' })
    const body = (await bad.json()) as Json
    expect(bad.status).toBe(400)
    expect(body.error).toBe('redirect_not_allowed')
    expect(String(body.message)).toContain('https://phish.test is not an allowed return address')
    expect(btcpay.invoices.size).toBeGreaterThan(0)
    const lookalike = await post(`${d.url}/v1/purchase`, {
      product: 'redir',
      redirect_url: 'https://merchant.test/returnx',
    })
    expect(lookalike.status).toBe(400)
    for (const ok of [
      'https://merchant.test/return/done',
      'https://tandem.shop.test/thank-you',
      'https://partner.test/after',
    ]) {
      const res = await post(`${d.url}/v1/purchase`, { product: 'redir', redirect_url: ok })
      expect(res.status, ok).toBe(200)
    }
    const sent = [...btcpay.invoices.values()].map((i) => i.redirectURL)
    expect(sent).not.toContain('https://phish.test/return')
    expect(p.id).toBeTruthy()
  })
})

describe('recover', () => {
  let key = ''
  let invoiceId = ''

  it('by {license_key}, {key} and {invoice_id, email}; names, not slugs', async () => {
    const p = await product({ slug: 'rec', name: 'Recoverable App', price_value: 2000 })
    await tier(p.id, { slug: 'gold', name: 'Gold Edition', price_value_override: 3000 })
    const s = (await (
      await post(`${d.url}/v1/purchase`, { product: 'rec', policy_slug: 'gold', buyer_email: 'Buyer@Example.com' })
    ).json()) as { invoice_id: string; provider_invoice_id: string }
    expect((await btcpay.pay(s.provider_invoice_id)).status).toBe(200)
    const polled = (await (await fetch(`${d.url}/v1/purchase/${s.invoice_id}`)).json()) as { license_key: string }
    key = polled.license_key
    invoiceId = s.invoice_id
    for (const body of [{ license_key: key }, { key }, { invoice_id: invoiceId, email: ' buyer@EXAMPLE.com' }]) {
      const res = await post(`${d.url}/v1/recover`, body)
      const out = (await res.json()) as Json
      expect(res.status, JSON.stringify(body)).toBe(200)
      expect(out).toMatchObject({ product_name: 'Recoverable App', policy_name: 'Gold Edition', policy_slug: 'gold' })
      expect(String(out.license_key)).toMatch(/^LIC1-/)
    }
    expect((await post(`${d.url}/v1/recover`, { invoice_id: invoiceId })).status).toBe(400)
  })

  it('a wrong e-mail and an unknown invoice get identical 404 answers', async () => {
    const wrong = await post(`${d.url}/v1/recover`, { invoice_id: invoiceId, email: 'thief@example.com' })
    const unknown = await post(`${d.url}/v1/recover`, {
      invoice_id: '00000000-0000-4000-8000-000000000000',
      email: 'buyer@example.com',
    })
    expect(wrong.status).toBe(404)
    expect(unknown.status).toBe(404)
    expect(await wrong.text()).toBe(await unknown.text())
  })

  it('the recover page offers both ways and shows product and tier names', async () => {
    const page = await (await fetch(`${d.url}/recover`)).text()
    expect(page).toContain('id="recover-by-key"')
    expect(page).toContain('id="recover-by-invoice"')
    const res = await form(`${d.url}/recover`, { invoice_id: invoiceId, email: 'buyer@example.com' })
    const html = await res.text()
    expect(res.status).toBe(200)
    expect(html).toContain('<dd>Recoverable App</dd>')
    expect(html).toContain('<dd>Gold Edition</dd>')
    const miss = await form(`${d.url}/recover`, { invoice_id: invoiceId, email: 'thief@example.com' })
    expect(miss.status).toBe(404)
    expect(await miss.text()).not.toContain('Gold Edition')
  })
})

describe('recover rate limit', () => {
  it('allows 10 recover attempts a minute per address', async () => {
    const limited = await startDaemon({ env: { LICENSING_RATE_LIMIT: '600' } })
    try {
      const statuses: number[] = []
      for (let i = 0; i < 11; i++) {
        const res = await post(`${limited.url}/v1/recover`, {
          invoice_id: '00000000-0000-4000-8000-000000000000',
          email: `guess${i}@example.com`,
        })
        statuses.push(res.status)
        await res.body?.cancel()
      }
      expect(statuses.slice(0, 10).every((s) => s === 404)).toBe(true)
      expect(statuses[10]).toBe(429)
    } finally {
      await limited.stop()
    }
  })
})
