import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { FakeBtcpay } from '../../fakes/btcpay'
import { LoopbackServer } from '../../fakes/loopback'

let d: TestDaemon
let btcpay: FakeBtcpay
let receiver: LoopbackServer
const HOOK_SECRET = 'tandem-outbound-secret-0123'

beforeAll(async () => {
  btcpay = await new FakeBtcpay().start()
  receiver = await new LoopbackServer(() => ({ status: 200 })).start()
  d = await startDaemon({ env: { LICENSING_RATE_LIMIT: '0' } })
})

afterAll(async () => {
  await d?.stop()
  await Promise.all([btcpay?.stop(), receiver?.stop()])
})

const adminPost = (path: string, body: unknown) => d.admin(path, { method: 'POST', body: JSON.stringify(body) })

describe('provider connections and outbound endpoints (admin)', () => {
  it('a BTCPay key the store refuses is not saved', async () => {
    const res = await adminPost('/v1/admin/btcpay/connect', {
      base_url: btcpay.url,
      store_id: btcpay.storeId,
      api_key: 'refused-api-key-1',
      webhook_secret: 'some-webhook-secret',
    })
    expect(res.status).toBe(400)
    const st = (await (await d.admin('/v1/admin/providers')).json()) as {
      active: string | null
      btcpay: { connected: boolean }
    }
    expect(st).toMatchObject({ active: null, btcpay: { connected: false } })
  })

  it('admin endpoints need the admin credential and refuse cross-origin writes', async () => {
    expect((await fetch(`${d.url}/v1/admin/providers`)).status).toBe(401)
    const cross = await d.admin('/v1/admin/btcpay/disconnect', {
      method: 'POST',
      body: '{}',
      headers: { Origin: 'http://evil.example' },
    })
    expect(cross.status).toBe(403)
  })

  it('connects, serves the spec path /v1/provider_a/webhook, and never shows or logs secrets', async () => {
    const res = await adminPost('/v1/admin/btcpay/connect', {
      base_url: btcpay.url,
      store_id: btcpay.storeId,
      api_key: btcpay.apiKey,
      webhook_secret: btcpay.webhookSecret,
    })
    expect(res.status).toBe(200)
    const st = (await res.json()) as { btcpay: { webhook_url: string; has_webhook_secret: boolean } }
    expect(st.btcpay.has_webhook_secret).toBe(true)
    expect(st.btcpay.webhook_url).toMatch(/\/v1\/btcpay\/webhook$/)

    const unknown = await btcpay.sendEvent('InvoiceSettled', 'NotOurs1', { url: `${d.url}/v1/provider_a/webhook` })
    expect(unknown.status).toBe(200)
    expect(JSON.parse(unknown.text)).toMatchObject({ ok: true, outcome: 'ignored_unknown_invoice' })
    const forged = await btcpay.sendEvent('InvoiceSettled', 'NotOurs1', {
      url: `${d.url}/v1/provider_a/webhook`,
      signature: null,
    })
    expect(forged.status).toBe(401)

    const ep = await adminPost('/v1/admin/webhook-endpoints', {
      url: `${receiver.url}/in`,
      secret: HOOK_SECRET,
      events: ['*'],
    })
    expect(ep.status).toBe(200)
    const epBody = await ep.text()
    expect(epBody).not.toContain(HOOK_SECRET)
    const listed = await (await d.admin('/v1/admin/webhook-endpoints')).text()
    expect(listed).not.toContain(HOOK_SECRET)
    const short = await adminPost('/v1/admin/webhook-endpoints', { url: `${receiver.url}/in`, secret: 'short' })
    expect(short.status).toBe(400)

    const everything = [
      await (await d.admin('/v1/admin/providers')).text(),
      await (await d.admin('/v1/admin/audit?limit=200')).text(),
      listed,
      d.logs.lines.join('\n'),
    ].join('\n')
    for (const secret of [btcpay.apiKey, btcpay.webhookSecret, HOOK_SECRET, 'refused-api-key-1']) {
      expect(everything).not.toContain(secret)
    }
  })

  it('the Zaprite webhook path answers 404 while Zaprite is not connected', async () => {
    const res = await fetch(`${d.url}/v1/provider_b/webhook`, { method: 'POST', body: '{"data":{"id":"od_1"}}' })
    expect(res.status).toBe(404)
  })

  it('a webhook body over the limit is refused', async () => {
    const res = await fetch(`${d.url}/v1/btcpay/webhook`, { method: 'POST', body: 'x'.repeat(300 * 1024) })
    expect(res.status).toBe(413)
  })
})
