import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { FakeBtcpay } from '../../fakes/btcpay'
import { FakeZaprite } from '../../fakes/zaprite'

let d: TestDaemon
let btcpay: FakeBtcpay
let zaprite: FakeZaprite

beforeAll(async () => {
  btcpay = await new FakeBtcpay().start()
  zaprite = await new FakeZaprite().start()
  d = await startDaemon({ env: { LICENSING_RATE_LIMIT: '0', PUBLIC_URL: 'http://127.0.0.1:9' } })
  btcpay.webhookUrl = `${d.url}/v1/provider_a/webhook`
  zaprite.webhookUrl = `${d.url}/v1/provider_b/webhook`
})

afterAll(async () => {
  await d?.stop()
  await Promise.all([btcpay?.stop(), zaprite?.stop()])
})

const post = (path: string, body: unknown) => d.admin(path, { method: 'POST', body: JSON.stringify(body) })
const json = async <T>(res: Response | Promise<Response>): Promise<T> => (await (await res).json()) as T
type Status = {
  active: string | null
  btcpay: { state: string; open_invoices: number; webhook_id: string | null; store_id: string | null }
  zaprite: { state: string; webhook_id: string | null }
}

describe('provider admin over HTTP', () => {
  it('BTCPay connects by authorization: consent at BTCPay, key on the callback, state single-use', async () => {
    const start = await json<{ authorize_url: string; permissions: string[] }>(
      post('/v1/admin/provider_a/authorize', { base_url: btcpay.url }),
    )
    expect(start.permissions).toHaveLength(4)
    const consent = await btcpay.consent(start.authorize_url, { via: d.url })
    expect(consent.status).toBe(303)
    expect(consent.location).toBe('/#/licensing?tab=payments&btcpay=connected')
    const st = await json<Status>(d.admin('/v1/admin/provider_a/status'))
    expect(st).toMatchObject({ active: 'btcpay', btcpay: { state: 'active', store_id: btcpay.storeId } })
    expect(st.btcpay.webhook_id).toBe([...btcpay.webhooks.values()][0]!.id)

    const again = await btcpay.consent(start.authorize_url, { via: d.url })
    expect(again.location).toMatch(/btcpay=error/)
    expect(d.logs.lines.join('\n')).not.toContain(consent.grant.apiKey)
  })

  it('the provider_b aliases connect Zaprite (webhook registered); the BTCPay invoice opened before still settles', async () => {
    const created = await post('/v1/admin/products', {
      slug: 'switch-app',
      name: 'Switch app',
      price_currency: 'SAT',
      price_value: 5000,
    })
    expect(created.status).toBe(200)
    const invoice = await json<{ invoice_id: string; provider_invoice_id: string; provider: string }>(
      fetch(`${d.url}/v1/purchase`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ product: 'switch-app' }),
      }),
    )
    expect(invoice.provider).toBe('btcpay')

    expect((await post('/v1/admin/provider_a/disconnect', {})).status).toBe(200)
    const zst = await json<Status>(
      post('/v1/admin/provider_b/connect', { api_key: zaprite.apiKey, base_url: zaprite.url }),
    )
    expect(zst.active).toBe('zaprite')
    expect(zst.zaprite.webhook_id).toBe([...zaprite.webhooks.values()][0]!.id)
    expect(zst.btcpay).toMatchObject({ state: 'settling', open_invoices: 1 })
    expect((await json<Status>(d.admin('/v1/admin/provider_b/status'))).zaprite.state).toBe('active')

    const res = await btcpay.pay(invoice.provider_invoice_id)
    expect(res.status).toBe(200)
    const polled = await json<{ status: string; license_key: string | null }>(
      fetch(`${d.url}/v1/purchase/${invoice.invoice_id}`),
    )
    expect(polled.status).toBe('settled')
    expect(polled.license_key).toMatch(/^LIC1-/)
  })

  it('forgetting a provider needs confirm: true', async () => {
    const res = await post('/v1/admin/providers/btcpay/forget', {})
    expect(res.status).toBe(400)
  })
})
