import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { FakeBtcpay } from '../../fakes/btcpay'
import { FakeRateSources } from '../../fakes/rates'
import { FakeZaprite } from '../../fakes/zaprite'

let d: TestDaemon
let btcpay: FakeBtcpay
let zaprite: FakeZaprite
let rates: FakeRateSources

async function json<T = Record<string, unknown>>(res: Response | Promise<Response>): Promise<T> {
  const r = await res
  return (await r.json()) as T
}

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

async function createProduct(body: Record<string, unknown>): Promise<{ id: string; slug: string }> {
  const res = await d.admin('/v1/admin/products', { method: 'POST', body: JSON.stringify(body) })
  expect(res.status).toBe(200)
  return json(res)
}

async function purchase(body: Record<string, unknown>) {
  const res = await post(`${d.url}/v1/purchase`, body)
  const out = await json<{
    invoice_id: string
    provider_invoice_id: string
    btcpay_invoice_id: string
    checkout_url: string
    amount_sats: number
    poll_url: string
    status: string
    error?: string
    message?: string
  }>(res)
  expect(res.status, JSON.stringify(out)).toBe(200)
  return out
}

const poll = (id: string) =>
  json<{ status: string; license_key: string | null; license_id: string | null; amount_sats: number }>(
    fetch(`${d.url}/v1/purchase/${id}`),
  )

async function licensesFor(invoiceId: string): Promise<number> {
  const all = await json<{ licenses: { id: string; invoice_id: string | null }[] }>(
    d.admin('/v1/admin/licenses?limit=500'),
  )
  const mine = all.licenses.filter((l) => l.invoice_id === invoiceId)
  const inv = await json<{ license_id: string | null }>(d.admin(`/v1/admin/invoices/${invoiceId}`))
  expect(inv.license_id).toBe(mine[0]?.id ?? null)
  return mine.length
}

beforeAll(async () => {
  btcpay = await new FakeBtcpay().start()
  zaprite = await new FakeZaprite().start()
  rates = await new FakeRateSources().start()
  d = await startDaemon({ env: { ...rates.env, LICENSING_RATE_LIMIT: '0' } })
  btcpay.webhookUrl = `${d.url}/v1/btcpay/webhook`
  zaprite.webhookUrl = `${d.url}/v1/zaprite/webhook`
})

afterAll(async () => {
  await d?.stop()
  await Promise.all([btcpay?.stop(), zaprite?.stop(), rates?.stop()])
})

describe('BTCPay Server', () => {
  let btcKey = ''

  it('purchase → checkout → signed webhook → poll shows the key → the key validates', async () => {
    await createProduct({ slug: 'notes', name: 'Notes', price_currency: 'SAT', price_value: 50_000 })
    const none = await post(`${d.url}/v1/purchase`, { product: 'notes' })
    expect(none.status).toBe(503)

    const conn = await d.admin('/v1/admin/btcpay/connect', {
      method: 'POST',
      body: JSON.stringify({
        base_url: btcpay.url,
        store_id: btcpay.storeId,
        api_key: btcpay.apiKey,
        webhook_secret: btcpay.webhookSecret,
      }),
    })
    const status = await json<{ active: string; btcpay: Record<string, unknown> }>(conn)
    expect(conn.status).toBe(200)
    expect(status.active).toBe('btcpay')
    expect(JSON.stringify(status)).not.toContain(btcpay.apiKey)
    expect(JSON.stringify(status)).not.toContain(btcpay.webhookSecret)

    const p = await purchase({ product: 'notes', buyer_email: 'buyer@example.com' })
    expect(p.amount_sats).toBe(50_000)
    expect(p.status).toBe('pending')
    expect(p.poll_url.endsWith(`/v1/purchase/${p.invoice_id}`)).toBe(true)
    expect(p.btcpay_invoice_id).toBe(p.provider_invoice_id)
    const created = btcpay.requests.find((r) => r.method === 'POST')!
    expect(created.headers.authorization).toBe(`token ${btcpay.apiKey}`)
    const sent = JSON.parse(created.body) as {
      amount: string
      currency: string
      metadata: { orderId: string }
      checkout: { redirectURL: string }
    }
    expect(sent).toMatchObject({ amount: '0.00050000', currency: 'BTC', metadata: { orderId: p.invoice_id } })
    expect(sent.checkout.redirectURL).toContain(`/thank-you?invoice=${p.invoice_id}`)
    expect((await fetch(p.checkout_url)).status).toBe(200)

    expect(await poll(p.invoice_id)).toMatchObject({ status: 'pending', license_key: null })
    const hook = await btcpay.pay(p.provider_invoice_id)
    expect(hook.status).toBe(200)
    const settled = await poll(p.invoice_id)
    expect(settled.status).toBe('settled')
    expect(settled.license_key).toMatch(/^LIC1-/)
    btcKey = settled.license_key!

    const v = await json<{ ok: boolean; product_slug: string }>(
      post(`${d.url}/v1/validate`, { key: btcKey, product_slug: 'notes' }),
    )
    expect(v).toMatchObject({ ok: true, product_slug: 'notes' })

    // A replayed settle changes nothing: still one license, same key.
    expect((await btcpay.sendEvent('InvoiceSettled', p.provider_invoice_id)).status).toBe(200)
    expect(await licensesFor(p.invoice_id)).toBe(1)
    expect((await poll(p.invoice_id)).license_key).toBe(btcKey)
  })

  it('forged or missing BTCPay-Sig → 401 and nothing changes', async () => {
    const p = await purchase({ product: 'notes' }) // unpaid at BTCPay: only a forged event could settle it
    const forged = await btcpay.sendEvent('InvoiceSettled', p.provider_invoice_id, {
      signature: `sha256=${'0'.repeat(64)}`,
    })
    expect(forged.status).toBe(401)
    const missing = await btcpay.sendEvent('InvoiceSettled', p.provider_invoice_id, { signature: null })
    expect(missing.status).toBe(401)
    const garbage = await btcpay.sendEvent('InvoiceSettled', p.provider_invoice_id, { signature: 'md5=abc' })
    expect(garbage.status).toBe(401)
    // Signed with another secret over the same body.
    const other = new FakeBtcpay({ webhookSecret: 'someone-elses-secret' })
    const body = JSON.stringify({ type: 'InvoiceSettled', invoiceId: p.provider_invoice_id, storeId: btcpay.storeId })
    const wrongSecret = await btcpay.deliverRaw(body, { signature: other.sign(body) })
    expect(wrongSecret.status).toBe(401)
    expect(await poll(p.invoice_id)).toMatchObject({ status: 'pending', license_key: null })
    expect(await licensesFor(p.invoice_id)).toBe(0)
  })

  it('concurrent duplicate settle deliveries issue one license', async () => {
    const p = await purchase({ product: 'notes' })
    btcpay.setStatus(p.provider_invoice_id, 'Settled')
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        i % 2 === 0
          ? btcpay.sendEvent('InvoiceSettled', p.provider_invoice_id)
          : btcpay.sendEvent('InvoicePaymentSettled', p.provider_invoice_id),
      ),
    )
    expect(answers.every((a) => a.status === 200)).toBe(true)
    expect(await licensesFor(p.invoice_id)).toBe(1)
    expect((await poll(p.invoice_id)).status).toBe('settled')
  })

  it('a lost webhook: polling a paid invoice makes Tandem ask BTCPay, and the key appears', async () => {
    const p = await purchase({ product: 'notes' })
    btcpay.setStatus(p.provider_invoice_id, 'Settled') // paid, but the webhook never arrives
    let seen = await poll(p.invoice_id)
    for (let i = 0; i < 50 && seen.status === 'pending'; i++) {
      await new Promise((r) => setTimeout(r, 20))
      seen = await poll(p.invoice_id)
    }
    expect(seen.status).toBe('settled')
    expect(seen.license_key).toMatch(/^LIC1-/)
    expect(await licensesFor(p.invoice_id)).toBe(1)
  })

  it('InvoiceExpired closes a pending invoice; the poll says expired', async () => {
    const p = await purchase({ product: 'notes' })
    btcpay.setStatus(p.provider_invoice_id, 'Expired')
    expect((await btcpay.sendEvent('InvoiceExpired', p.provider_invoice_id)).status).toBe(200)
    expect(await poll(p.invoice_id)).toMatchObject({ status: 'expired', license_key: null })
  })

  describe('Zaprite', () => {
    it('a key Zaprite refuses is not saved and the active provider stays', async () => {
      const res = await d.admin('/v1/admin/zaprite/connect', {
        method: 'POST',
        body: JSON.stringify({ api_key: 'wrong-key-123456', base_url: zaprite.url }),
      })
      expect(res.status).toBe(400)
      expect(JSON.stringify(await res.json())).not.toContain('wrong-key-123456')
      const st = await json<{ active: string; zaprite: { connected: boolean } }>(d.admin('/v1/admin/zaprite/status'))
      expect(st.active).toBe('btcpay')
      expect(st.zaprite.connected).toBe(false)
      const probe = zaprite.requests.at(-1)!
      expect(probe.path).toBe('/v1/orders?limit=1')
      expect(probe.headers.authorization).toBe('Bearer wrong-key-123456')
    })

    it('USD product: rate audit fields stored, order in cents, webhook re-checked, key validates', async () => {
      const conn = await d.admin('/v1/admin/zaprite/connect', {
        method: 'POST',
        body: JSON.stringify({ api_key: zaprite.apiKey, base_url: zaprite.url }),
      })
      expect(conn.status).toBe(200)
      expect((await json<{ active: string }>(conn)).active).toBe('zaprite')

      await createProduct({ slug: 'studio', name: 'Studio', price_currency: 'USD', price_value: 1999 })
      const p = await purchase({ product: 'studio' })
      const centibps = 972_501_200 // the fake Kraken's 97,250.12 USD per BTC
      expect(p.amount_sats).toBe(Number((1999n * 10_000_000_000n + BigInt(centibps) - 1n) / BigInt(centibps)))
      const inv = await json<Record<string, unknown>>(d.admin(`/v1/admin/invoices/${p.invoice_id}`))
      expect(inv).toMatchObject({
        listed_currency: 'USD',
        listed_value: 1999,
        exchange_rate_centibps: centibps,
        exchange_rate_source: 'kraken',
        provider: 'zaprite',
      })
      const order = zaprite.orders.get(p.provider_invoice_id)!
      expect(order).toMatchObject({ amount: 1999, currency: 'USD', externalUniqId: p.invoice_id })

      // Zaprite signs nothing: a webhook claiming "paid" is only a hint until Zaprite confirms.
      const early = await zaprite.sendWebhook({ event: 'order.change', data: { id: order.id, status: 'PAID' } })
      expect(early.status).toBe(200)
      expect((await poll(p.invoice_id)).status).toBe('pending')
      zaprite.setStatus(order.id, 'UNDERPAID')
      await zaprite.sendWebhook({ event: 'order.change', data: { id: order.id, status: 'UNDERPAID' } })
      expect((await poll(p.invoice_id)).status).toBe('pending')

      // Paid: six copies of the event arrive at once; each re-fetches the order; one license.
      zaprite.setStatus(order.id, 'OVERPAID')
      const deliveries = await Promise.all(
        Array.from({ length: 6 }, () =>
          zaprite.sendWebhook({ event: 'order.change', data: { id: order.id, status: 'OVERPAID' } }),
        ),
      )
      expect(deliveries.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200])
      const settled = await poll(p.invoice_id)
      expect(settled.status).toBe('settled')
      const v = await json<{ ok: boolean }>(
        post(`${d.url}/v1/validate`, { key: settled.license_key, product_slug: 'studio' }),
      )
      expect(v.ok).toBe(true)
      expect((await zaprite.pay(order.id)).status).toBe(200)
      expect(await licensesFor(p.invoice_id)).toBe(1)
    })

    it('rejects a webhook without an order id, for an unknown order, or with malformed JSON; nothing changes', async () => {
      const p = await purchase({ product: 'studio' })
      expect((await zaprite.sendWebhook({ event: 'order.change', data: { status: 'PAID' } })).status).toBe(400)
      expect(
        (await zaprite.sendWebhook({ event: 'order.change', data: { id: 'od_unknown', status: 'PAID' } })).status,
      ).toBe(404)
      expect((await zaprite.sendRaw('{"event": "order.change", "data": {')).status).toBe(400)
      expect((await zaprite.sendRaw('[1,2,3]')).status).toBe(400)
      expect(await poll(p.invoice_id)).toMatchObject({ status: 'pending', license_key: null })
      // Once the buyer really pays, the real webhook issues the license.
      expect((await zaprite.pay(p.provider_invoice_id)).status).toBe(200)
      expect((await poll(p.invoice_id)).status).toBe('settled')
    })

    it('switching providers never touches existing keys', async () => {
      const all = await json<{ licenses: { id: string; status: string }[] }>(d.admin('/v1/admin/licenses?limit=500'))
      expect(all.licenses.length).toBeGreaterThanOrEqual(3)
      expect(all.licenses.every((l) => l.status === 'active')).toBe(true)
      const sw = await d.admin('/v1/admin/providers/btcpay/activate', { method: 'POST', body: '{}' })
      expect((await json<{ active: string }>(sw)).active).toBe('btcpay')
      const dis = await d.admin('/v1/admin/zaprite/disconnect', { method: 'POST', body: '{}' })
      expect((await json<{ active: string; zaprite: { connected: boolean } }>(dis)).zaprite.connected).toBe(false)
      const after = await json<{ licenses: { id: string; status: string }[] }>(d.admin('/v1/admin/licenses?limit=500'))
      expect(after.licenses.map((l) => l.id).sort()).toEqual(all.licenses.map((l) => l.id).sort())
      expect(after.licenses.every((l) => l.status === 'active')).toBe(true)
    })
  })
})
