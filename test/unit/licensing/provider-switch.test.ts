import type { Server } from 'node:http'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { licensingPaymentsContract } from '../../../src-main/contract/licensing'
import { AUTHORIZE_TTL_MS } from '../../../src-main/licensing/providers/btcpayAuthorize'
import { FakeBtcpay } from '../../fakes/btcpay'
import { FakeZaprite } from '../../fakes/zaprite'
import { paymentsHarness, satProduct, type Harness, servePaymentRoutes } from './payments-harness'

let h: Harness
let btcpay: FakeBtcpay
let zaprite: FakeZaprite
let server: Server
let base: string

beforeEach(async () => {
  btcpay = await new FakeBtcpay().start()
  zaprite = await new FakeZaprite().start()
  h = paymentsHarness()
  btcpay.now = () => h.clock.now()
  zaprite.now = () => h.clock.now()
  satProduct(h)
  ;({ server, base } = await servePaymentRoutes(h))
  btcpay.webhookUrl = `${base}/v1/btcpay/webhook`
  zaprite.webhookUrl = `${base}/v1/zaprite/webhook`
})

afterEach(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()))
  await h.close()
  await Promise.all([btcpay.stop(), zaprite.stop()])
})

const connectBtcpay = (storeId = btcpay.storeId) =>
  h.payments.providers.connectBtcpay({
    baseUrl: btcpay.url,
    storeId,
    apiKey: btcpay.apiKey,
    webhookSecret: btcpay.webhookSecret,
  })
const connectZaprite = () => h.payments.providers.connectZaprite({ apiKey: zaprite.apiKey, baseUrl: zaprite.url })
const status = (id: string) => h.payments.purchases.poll(id)

describe('switching providers strands nobody', () => {
  it('disconnect BTCPay, connect Zaprite: the old invoice still settles by webhook; new ones go to Zaprite', async () => {
    await connectBtcpay()
    const old = await h.payments.purchases.start({ product: 'app' })
    h.payments.providers.disconnect('btcpay')
    await connectZaprite()

    const st = h.payments.providers.status()
    expect(st.active).toBe('zaprite')
    expect(st.btcpay).toMatchObject({ state: 'settling', open_invoices: 1, connected: false, active: false })

    const fresh = await h.payments.purchases.start({ product: 'app' })
    expect(fresh.provider).toBe('zaprite')

    const res = await btcpay.pay(old.provider_invoice_id!)
    expect(res.status).toBe(200)
    expect(status(old.invoice_id).status).toBe('settled')
    expect(status(old.invoice_id).license_key).toMatch(/^LIC1-/)

    // Its last open invoice settled: the next sweep forgets the settling credentials.
    await h.payments.reconciler.tick()
    expect(h.payments.providers.status().btcpay.state).toBe('disconnected')
    expect(h.payments.providers.forKind('btcpay')).toBeNull()
  })

  it('a settling provider re-checks and settles; it cannot take new purchases or be activated', async () => {
    await connectBtcpay()
    const old = await h.payments.purchases.start({ product: 'app' })
    h.payments.providers.disconnect('btcpay')
    await expect(h.payments.purchases.start({ product: 'app' })).rejects.toThrow(/no payment provider/)
    expect(() => h.payments.providers.activate('btcpay')).toThrow(/settling/)
    btcpay.setStatus(old.provider_invoice_id!, 'Settled')
    expect(await h.payments.reconciler.recheck(old.invoice_id)).toBe('settled')
  })

  it('a replaced provider keeps settling; credentials for another store are refused while invoices are open', async () => {
    await connectBtcpay()
    const old = await h.payments.purchases.start({ product: 'app' })
    await connectZaprite()
    expect(h.payments.providers.status().btcpay).toMatchObject({ state: 'settling', open_invoices: 1 })
    await expect(connectBtcpay('SomeOtherStore')).rejects.toThrow(/settling 1 open invoice/)
    expect(h.payments.providers.status().btcpay.store_id).toBe(btcpay.storeId)
    await btcpay.pay(old.provider_invoice_id!)
    expect(status(old.invoice_id).status).toBe('settled')
    expect(h.payments.providers.status().btcpay.state).toBe('standby')
  })

  it('the same store on a new server URL reconnects while invoices are open', async () => {
    await connectBtcpay()
    await h.payments.purchases.start({ product: 'app' })
    const moved = await new FakeBtcpay({
      apiKey: btcpay.apiKey,
      storeId: btcpay.storeId,
      webhookSecret: btcpay.webhookSecret,
    }).start()
    try {
      const st = await h.payments.providers.connectBtcpay({
        baseUrl: moved.url,
        storeId: btcpay.storeId,
        apiKey: btcpay.apiKey,
        webhookSecret: btcpay.webhookSecret,
      })
      expect(st.btcpay).toMatchObject({ state: 'active', base_url: moved.url })
    } finally {
      await moved.stop()
    }
  })

  it('the admin can forget a settling provider early, with a confirmation', async () => {
    await connectBtcpay()
    await h.payments.purchases.start({ product: 'app' })
    h.payments.providers.disconnect('btcpay')
    const input = licensingPaymentsContract.licAdminForgetProvider.input
    expect(input.safeParse({ provider: 'btcpay' }).success).toBe(false)
    expect(input.safeParse({ provider: 'btcpay', confirm: false }).success).toBe(false)
    const out = await h.payments.handlers.licAdminForgetProvider(
      input.parse({ provider: 'btcpay', confirm: true }),
      {} as never,
    )
    expect(out.btcpay.state).toBe('disconnected')
    const audit = h.services.db.prepare("SELECT details FROM audit_log WHERE action = 'provider.forgotten'").get() as {
      details: string
    }
    expect(JSON.parse(audit.details)).toMatchObject({ open_invoices: 1 })
  })
})

describe('Zaprite webhook registration', () => {
  it('registers the webhook on connect and records its id in provider_b_config', async () => {
    const st = await connectZaprite()
    const [hook] = [...zaprite.webhooks.values()]
    expect(hook?.url).toBe(st.zaprite.webhook_url)
    expect(st.zaprite.webhook_id).toBe(hook!.id)
    const row = h.services.db.prepare('SELECT webhook_id FROM provider_b_config').get() as { webhook_id: string }
    expect(row.webhook_id).toBe(hook!.id)
    await connectZaprite() // reconnecting the same account keeps the one webhook
    expect(zaprite.webhooks.size).toBe(1)
  })

  it('connects without a webhook id where the API offers no registration', async () => {
    zaprite.webhookApi = false
    const st = await connectZaprite()
    expect(st.zaprite).toMatchObject({ state: 'active', webhook_id: null })
  })
})

describe('BTCPay connect by authorization', () => {
  const grant = (apiKey: string, storeId = btcpay.storeId) => {
    const f = new URLSearchParams({ apiKey })
    for (const p of [
      'btcpay.store.canviewstoresettings',
      'btcpay.store.cancreateinvoice',
      'btcpay.store.canviewinvoices',
      'btcpay.store.webhooks.canmodifywebhooks',
    ])
      f.append('permissions', `${p}:${storeId}`)
    return f
  }
  const stateOf = (url: string) => new URL(new URL(url).searchParams.get('redirect')!).searchParams.get('state')

  it('asks for exactly the permissions Tandem needs and connects with the granted key', async () => {
    const start = h.payments.btcpayAuth.start({ baseUrl: btcpay.url })
    const url = new URL(start.authorize_url)
    expect(url.origin + url.pathname).toBe(`${btcpay.url}/api-keys/authorize`)
    expect(url.searchParams.getAll('permissions').sort()).toEqual([
      'btcpay.store.cancreateinvoice',
      'btcpay.store.canviewinvoices',
      'btcpay.store.canviewstoresettings',
      'btcpay.store.webhooks.canmodifywebhooks',
    ])
    expect(url.searchParams.get('redirect')).toMatch(/\/v1\/btcpay\/authorize\/callback\?state=[A-Za-z0-9_-]{43}$/)
    const granted = `granted-key-${Date.now()}`
    btcpay.grants.push({ apiKey: granted, permissions: [] })
    await h.payments.btcpayAuth.complete(stateOf(start.authorize_url), grant(granted))
    const st = h.payments.providers.status()
    expect(st.btcpay).toMatchObject({ state: 'active', store_id: btcpay.storeId, has_webhook_secret: true })
    const [hook] = [...btcpay.webhooks.values()]
    expect(st.btcpay.webhook_id).toBe(hook!.id)
    expect(hook!.url).toBe(st.btcpay.webhook_url)
    // The secret Tandem generated verifies events the store signs.
    const s = await h.payments.purchases.start({ product: 'app' })
    await btcpay.pay(s.provider_invoice_id!)
    expect(status(s.invoice_id).status).toBe('settled')
    expect(h.logs.lines.join('\n')).not.toContain(granted)
  })

  it('the state is single-use and expires', async () => {
    const granted = 'granted-key-abcdefgh'
    btcpay.grants.push({ apiKey: granted, permissions: [] })
    const a = h.payments.btcpayAuth.start({ baseUrl: btcpay.url, storeId: btcpay.storeId })
    await h.payments.btcpayAuth.complete(stateOf(a.authorize_url), grant(granted))
    await expect(h.payments.btcpayAuth.complete(stateOf(a.authorize_url), grant(granted))).rejects.toThrow(
      /already used/,
    )
    const b = h.payments.btcpayAuth.start({ baseUrl: btcpay.url, storeId: btcpay.storeId })
    h.clock.advance(AUTHORIZE_TTL_MS)
    await expect(h.payments.btcpayAuth.complete(stateOf(b.authorize_url), grant(granted))).rejects.toThrow(/expired/)
    await expect(h.payments.btcpayAuth.complete('forged', grant(granted))).rejects.toThrow(/malformed/)
  })

  it('refuses a grant missing a permission', async () => {
    const a = h.payments.btcpayAuth.start({ baseUrl: btcpay.url, storeId: btcpay.storeId })
    const f = grant('granted-key-xyz12345')
    f.delete('permissions')
    f.append('permissions', `btcpay.store.canviewinvoices:${btcpay.storeId}`)
    await expect(h.payments.btcpayAuth.complete(stateOf(a.authorize_url), f)).rejects.toThrow(/did not grant/)
    expect(h.payments.providers.status().btcpay.state).toBe('disconnected')
  })
})
