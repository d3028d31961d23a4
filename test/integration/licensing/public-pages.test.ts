import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeBtcpay } from '../../fakes/btcpay'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'

/** Public pages (issue 13, items 6 and 7): favicon, thank-you states, and the demo checkout page. */
let d: TestDaemon
let btcpay: FakeBtcpay

beforeAll(async () => {
  d = await startDaemon({ env: { LICENSING_RATE_LIMIT: '0' } })
  btcpay = await new FakeBtcpay().start()
  btcpay.webhookUrl = `${d.url}/v1/btcpay/webhook`
  const admin = (path: string, body: unknown) => d.admin(path, { method: 'POST', body: JSON.stringify(body) })
  expect(
    (
      await admin('/v1/admin/btcpay/connect', {
        base_url: btcpay.url,
        store_id: btcpay.storeId,
        api_key: btcpay.apiKey,
        webhook_secret: btcpay.webhookSecret,
      })
    ).status,
  ).toBe(200)
  expect((await admin('/v1/admin/products', { slug: 'notes', name: 'Notes Pro', price_value: 5000 })).status).toBe(200)
})
afterAll(async () => {
  await d?.stop()
  await btcpay?.stop()
})

async function purchase(): Promise<{ invoice_id: string; checkout_url: string }> {
  const res = await fetch(`${d.url}/v1/purchase`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ product: 'notes', buyer_email: 'ada@example.com' }),
  })
  expect(res.status).toBe(200)
  return (await res.json()) as { invoice_id: string; checkout_url: string }
}
const thankYou = async (id: string) => (await fetch(`${d.url}/thank-you?invoice=${id}`)).text()
const form = (url: string) => fetch(url, { method: 'POST', redirect: 'manual' })

describe('favicon', () => {
  it('is served without a credential at /favicon.ico and linked from every public page', async () => {
    const ico = await fetch(`${d.url}/favicon.ico`)
    expect(ico.status).toBe(200)
    expect(ico.headers.get('content-type')).toContain('image/svg+xml')
    expect(await ico.text()).toContain('<svg')
    const svg = await fetch(`${d.url}/buy/assets/favicon.svg`)
    expect(svg.status).toBe(200)
    const p = await purchase()
    for (const path of ['/buy/notes', '/recover', `/thank-you?invoice=${p.invoice_id}`]) {
      const html = await (await fetch(d.url + path)).text()
      expect(html, path).toContain('<link rel="icon" type="image/svg+xml" href="/buy/assets/favicon.svg"')
    }
  })
})

describe('thank-you page', () => {
  it('shows no key and no copy button while the payment is pending, and offers the payment page', async () => {
    const p = await purchase()
    const html = await thankYou(p.invoice_id)
    expect(html).not.toContain('Copy key')
    expect(html).not.toContain('id="license-key"')
    expect(html).toContain('Back to the payment page')
  })

  it('after paying on the checkout page: the key and copy button, no link back to payment', async () => {
    const p = await purchase()
    const checkout = await (await fetch(p.checkout_url)).text()
    expect(checkout).toContain('>Pay</button>')
    expect(checkout).toContain('>Expire</button>')
    const paid = await form(`${p.checkout_url}/pay`)
    expect(paid.status).toBe(303)
    expect(paid.headers.get('location')).toContain(`/thank-you?invoice=${p.invoice_id}`)
    const html = await thankYou(p.invoice_id)
    const key = html.match(/id="license-key"[^>]*>(LIC1-[A-Z2-7-]+)</)?.[1]
    expect(key).toBeDefined()
    expect(html).toContain('Copy key')
    expect(html).not.toContain('Back to the payment page')
    expect(html).not.toContain(p.checkout_url)
    const valid = await fetch(`${d.url}/v1/validate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ key, product_slug: 'notes' }),
    })
    expect(((await valid.json()) as { ok: boolean }).ok).toBe(true)
    // Paying twice does nothing more: the page says it is settled.
    expect(await (await fetch(p.checkout_url)).text()).toContain('This invoice is settled.')
  })

  it('after "Expire" on the checkout page: expired, no key, no link back to payment', async () => {
    const p = await purchase()
    const expired = await form(`${p.checkout_url}/expire`)
    expect(expired.status).toBe(303)
    const html = await thankYou(p.invoice_id)
    expect(html).toContain('This invoice expired before it was paid.')
    expect(html).not.toContain('Copy key')
    expect(html).not.toContain('Back to the payment page')
  })
})
