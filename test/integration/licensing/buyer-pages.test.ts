import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeBtcpay } from '../../fakes/btcpay'
import { FakeRateSources } from '../../fakes/rates'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'

/**
 * Issue 31, findings 5 and 6 over HTTP: the thank-you page for real invoices in each status, and
 * the buy page's discount preview and fiat equivalent.
 */
let d: TestDaemon
let btcpay: FakeBtcpay
let rates: FakeRateSources

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
const form = (url: string, fields: Record<string, string>) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  })
async function admin(path: string, method: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await d.admin(path, { method, body: body === undefined ? undefined : JSON.stringify(body) })
  const out = (await res.json()) as Record<string, unknown>
  expect(res.status, JSON.stringify(out)).toBe(200)
  return out
}

beforeAll(async () => {
  btcpay = await new FakeBtcpay().start()
  rates = await new FakeRateSources().start()
  d = await startDaemon({ env: { ...rates.env, LICENSING_RATE_LIMIT: '0' } })
  btcpay.webhookUrl = `${d.url}/v1/btcpay/webhook`
  await admin('/v1/admin/btcpay/connect', 'POST', {
    base_url: btcpay.url,
    store_id: btcpay.storeId,
    api_key: btcpay.apiKey,
    webhook_secret: btcpay.webhookSecret,
  })
  await admin('/v1/admin/products', 'POST', { slug: 'notes', name: 'Notes Pro', price_value: 50_000 })
  await admin('/v1/admin/discount-codes', 'POST', { code: 'LAUNCH20', kind: 'percent', value: 20 })
})
afterAll(async () => {
  await d?.stop()
  await Promise.all([btcpay?.stop(), rates?.stop()])
})

async function purchase(): Promise<{ invoice_id: string; provider_invoice_id: string }> {
  const res = await post(`${d.url}/v1/purchase`, { product: 'notes', buyer_email: 'ada@example.com' })
  expect(res.status).toBe(200)
  return (await res.json()) as { invoice_id: string; provider_invoice_id: string }
}
async function thankYou(id: string): Promise<{ h1: string; html: string }> {
  const res = await fetch(`${d.url}/thank-you?invoice=${id}`)
  expect(res.status).toBe(200)
  const html = await res.text()
  return {
    html,
    h1:
      html
        .match(/<h1>([\s\S]*?)<\/h1>/)?.[1]
        ?.replace(/\s+/g, ' ')
        .trim() ?? '',
  }
}
const status = async (id: string) =>
  ((await (await fetch(`${d.url}/v1/purchase/${id}`)).json()) as { status: string }).status

describe('thank-you page for real invoices', () => {
  it('pending: waiting for payment, no thanks, no key wording', async () => {
    const p = await purchase()
    const { h1, html } = await thankYou(p.invoice_id)
    expect(h1).toBe('Waiting for your payment')
    expect(html).not.toMatch(/thank you/i)
    expect(html).not.toMatch(/keep your key/i)
  })

  it('settled: thanks, the key, and "keep your key somewhere safe"', async () => {
    const p = await purchase()
    expect((await btcpay.pay(p.provider_invoice_id)).status).toBe(200)
    const { h1, html } = await thankYou(p.invoice_id)
    expect(h1).toBe('Thank you for buying Notes Pro')
    expect(html).toMatch(/id="license-key"[^>]*>LIC1-/)
    expect(html).toContain('Keep your key somewhere safe')
  })

  it('settled, then the license revoked: payment received, no key', async () => {
    const p = await purchase()
    await btcpay.pay(p.provider_invoice_id)
    const licenseId = ((await (await fetch(`${d.url}/v1/purchase/${p.invoice_id}`)).json()) as { license_id: string })
      .license_id
    await admin(`/v1/admin/licenses/${licenseId}/revoke`, 'POST', {})
    const { h1, html } = await thankYou(p.invoice_id)
    expect(h1).toBe('Payment received')
    expect(html).not.toContain('id="license-key"')
    expect(html).not.toMatch(/keep your key/i)
  })

  for (const [provider, event, state, heading] of [
    ['Expired', 'InvoiceExpired', 'expired', 'This invoice expired'],
    ['Invalid', 'InvoiceInvalid', 'invalid', 'This invoice is no longer valid'],
  ] as const) {
    it(`${state}: no thanks, no key wording, a link back to the buy page that works`, async () => {
      const p = await purchase()
      btcpay.setStatus(p.provider_invoice_id, provider)
      await btcpay.sendEvent(event, p.provider_invoice_id)
      expect(await status(p.invoice_id)).toBe(state)
      const { h1, html } = await thankYou(p.invoice_id)
      expect(h1).toBe(heading)
      expect(html).not.toMatch(/thank you/i)
      expect(html).not.toMatch(/\bkey\b/i)
      const back = html.match(/id="buy-again" href="([^"]+)"/)?.[1]
      expect(back).toBe('/buy/notes')
      expect((await fetch(d.url + back)).status).toBe(200)
    })
  }
})

describe('buy page: discount preview and fiat equivalent', () => {
  it('"Apply code" shows the price after the code, naming the code and the saving, and starts no purchase', async () => {
    const before = (await admin('/v1/admin/invoices', 'GET')).total
    const res = await form(`${d.url}/buy/notes`, { policy: 'default', code: 'launch20', intent: 'preview' })
    expect(res.status).toBe(200)
    const html = await res.text()
    const box = html.match(/<div[^>]*id="discount-preview"[\s\S]*?<\/div>/)?.[0] ?? ''
    expect(box).toContain('LAUNCH20')
    expect(box).toContain('You save 10,000 sats')
    expect(box).toContain('40,000 sats')
    // The form keeps the code for "Continue to payment".
    expect(html).toMatch(/id="code"[^>]*value="launch20"/)
    expect((await admin('/v1/admin/invoices', 'GET')).total).toBe(before)
  })

  it('an unknown code: the error on the buy page, no preview', async () => {
    const res = await form(`${d.url}/buy/notes`, { policy: 'default', code: 'NOPE', intent: 'preview' })
    const html = await res.text()
    expect(html).toContain('role="alert"')
    expect(html).not.toContain('id="discount-preview"')
  })

  it('a fiat equivalent appears only once a rate is cached: a page view fetches none', async () => {
    const calls = rates.requests('kraken').length
    const first = await (await fetch(`${d.url}/buy/notes`)).text()
    expect(rates.requests('kraken').length).toBe(calls)
    expect(first).not.toMatch(/about [$€]/)
    // A quote for a dollar price fetches (and caches) the USD rate.
    await admin('/v1/admin/products', 'POST', {
      slug: 'studio',
      name: 'Studio',
      price_currency: 'USD',
      price_value: 4900,
    })
    await (await fetch(`${d.url}/buy/studio`)).text()
    const html = await (await fetch(`${d.url}/buy/notes`)).text()
    expect(html).toMatch(/about \$\d+\.\d\d/)
  })
})
