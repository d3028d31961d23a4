/**
 * Tandem's buyer wire against the Keysat server's, as recorded in
 * test/fixtures/licensing/keysat-wire.json: every route there answers, with every field Keysat
 * returns, of the type Keysat returns it (Tandem may add fields). Plus the per-provider webhook
 * paths and the refusal of revoked keys, over HTTP.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { FakeBtcpay } from '../../fakes/btcpay'

type Raw = Record<string, unknown>
interface Wire {
  routes: string[]
  responses: Record<string, Record<string, string>>
}
const wire = JSON.parse(
  fs.readFileSync(path.join(__dirname, '../../fixtures/licensing/keysat-wire.json'), 'utf8'),
) as Wire

/** Whether `v` is what the fixture's type text says (see its `types` line). */
function fits(v: unknown, type: string): boolean {
  return type.split('|').some((alt) => {
    const t = alt.trim()
    if (t.endsWith('?')) return v === undefined || fits(v, t.slice(0, -1))
    if (t === 'null') return v === null
    if (t === 'true' || t === 'false') return v === (t === 'true')
    if (t.startsWith("'")) return v === t.slice(1, -1)
    return typeof v === t
  })
}

function expectShape(name: string, body: Raw): void {
  const shape = wire.responses[name]
  if (!shape) throw new Error(`the fixture has no ${name}`)
  for (const [field, type] of Object.entries(shape))
    expect(fits(body[field], type), `${name}: ${field} should be ${type}, is ${JSON.stringify(body[field])}`).toBe(true)
}

let d: TestDaemon
let btcpay: FakeBtcpay

async function call(verb: 'GET' | 'POST', p: string, body?: unknown): Promise<{ status: number; body: Raw }> {
  const res = await fetch(d.url + p, {
    method: verb,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json()) as Raw }
}
const admin = async (p: string, body: unknown) => {
  const res = await d.admin(p, { method: 'POST', body: JSON.stringify(body) })
  expect(res.status, p).toBe(200)
  return (await res.json()) as Raw
}

/** Buys `policy` and pays it through the per-provider webhook path Keysat registers at BTCPay. */
async function buyPaid(policy: string): Promise<{ key: string; licenseId: string }> {
  const p = await call('POST', '/v1/purchase', { product: 'app', policy_slug: policy })
  expect(p.status).toBe(200)
  expectShape('POST /v1/purchase (paid)', p.body)
  expect((await btcpay.pay(p.body.btcpay_invoice_id as string)).status).toBe(200)
  const polled = await call('GET', `/v1/purchase/${p.body.invoice_id as string}`)
  expectShape('GET /v1/purchase/:invoice_id', polled.body)
  return { key: polled.body.license_key as string, licenseId: polled.body.license_id as string }
}

beforeAll(async () => {
  btcpay = await new FakeBtcpay().start()
  d = await startDaemon({ env: { LICENSING_RATE_LIMIT: '0' } })
  const product = await admin('/v1/admin/products', { slug: 'app', name: 'App', price_currency: 'SAT', price_value: 0 })
  const policies = `/v1/admin/products/${product.id as string}/policies`
  await admin(policies, { slug: 'basic', name: 'Basic', tier_rank: 1, price_value_override: 1000, public: true })
  await admin(policies, { slug: 'pro', name: 'Pro', tier_rank: 2, price_value_override: 3000, public: true })
  await admin(policies, { slug: 'monthly', name: 'Monthly', is_recurring: true, renewal_period_days: 30 })
  await admin('/v1/admin/btcpay/connect', {
    base_url: btcpay.url,
    store_id: btcpay.storeId,
    api_key: btcpay.apiKey,
    webhook_secret: btcpay.webhookSecret,
  })
  btcpay.webhookUrl = `${d.url}/v1/btcpay/webhook/0b5e6d2a-keysat-provider`
})
afterAll(async () => {
  await d?.stop()
  await btcpay?.stop()
})

describe('the Keysat wire', () => {
  it('healthz, pubkey and the issuer public key', async () => {
    for (const route of ['GET /healthz', 'GET /v1/pubkey', 'GET /v1/issuer/public-key']) {
      const r = await call('GET', route.slice(4))
      expect(r.status, route).toBe(200)
      expectShape(route, r.body)
    }
    const pem = (await call('GET', '/v1/pubkey')).body.public_key_pem
    expect((await call('GET', '/v1/issuer/public-key')).body).toMatchObject({
      public_key_pem: pem,
      key_format_version: 2,
    })
  })

  it('a zero-total purchase: empty checkout_url, the key inline', async () => {
    const r = await call('POST', '/v1/purchase', { product: 'app' })
    expect(r.status).toBe(200)
    expectShape('POST /v1/purchase (zero total)', r.body)
    const polled = await call('GET', `/v1/purchase/${r.body.invoice_id as string}`)
    expect(r.body.license_key).toBe(polled.body.license_key)
  })

  it('quote and upgrade, paid through the per-provider webhook path', async () => {
    const { key, licenseId } = await buyPaid('basic')
    expect(key).toMatch(/^LIC1-/)
    const q = await call('POST', '/v1/upgrade-quote', { license_key: key, target_policy_slug: 'pro' })
    expect(q.status).toBe(200)
    expectShape('POST /v1/upgrade-quote', q.body)
    expect(q.body.effective_at).toBe('immediate')
    const up = await call('POST', '/v1/upgrade', { license_key: key, target_policy_slug: 'pro' })
    expect(up.status).toBe(200)
    expectShape('POST /v1/upgrade', up.body)
    expect((await btcpay.pay(up.body.provider_invoice_id as string)).status).toBe(200)
    expect((await call('POST', '/v1/validate', { key })).body).toMatchObject({ ok: true, license_id: licenseId })
    const detail = await d.admin(`/v1/admin/licenses/${licenseId}`)
    expect(JSON.stringify(await detail.json())).toContain('"policy_slug":"pro"')
  })

  it('the per-provider webhook paths answer exactly as the plain ones', async () => {
    for (const kind of ['btcpay', 'zaprite']) {
      const send = async (p: string) => {
        const r = await fetch(d.url + p, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{}',
        })
        return { status: r.status, body: (await r.json()) as Raw }
      }
      expect(await send(`/v1/${kind}/webhook/p-1`), kind).toEqual(await send(`/v1/${kind}/webhook`))
    }
    const bad = await fetch(`${d.url}/v1/btcpay/webhook/${'x'.repeat(200)}`, { method: 'POST', body: '{}' })
    expect(bad.status).toBe(404)
  })

  it('buyer cancel names the subscription', async () => {
    const p = await call('POST', '/v1/purchase', { product: 'app', policy_slug: 'monthly' })
    const key = (await call('GET', `/v1/purchase/${p.body.invoice_id as string}`)).body.license_key
    const c = await call('POST', '/v1/subscriptions/cancel', { license_key: key })
    expect(c.status).toBe(200)
    expectShape('POST /v1/subscriptions/cancel', c.body)
  })

  it('a revoked key answers 401 with the body of a garbage key; the poll no longer shows it', async () => {
    const { key, licenseId } = await buyPaid('basic')
    await admin(`/v1/admin/licenses/${licenseId}/revoke`, { reason: 'refund' })
    const bodies = { license_key: 'garbage', target_policy_slug: 'pro' }
    for (const route of ['/v1/upgrade-quote', '/v1/upgrade', '/v1/subscriptions/cancel']) {
      const garbage = await call('POST', route, bodies)
      const revoked = await call('POST', route, { ...bodies, license_key: key })
      expect(garbage.status, route).toBe(401)
      expectShape('error', garbage.body)
      expect(revoked, route).toEqual(garbage)
    }
  })

  it('every buyer route the fixture lists is served (webhooks above)', async () => {
    for (const route of wire.routes.filter((r) => !r.includes('webhook'))) {
      const [verb, p] = route.split(' ') as ['GET' | 'POST', string]
      const url = p.replace(':invoice_id', '3f2b8c1e-4d5a-4b6c-8d7e-9f0a1b2c3d4e')
      const res = await fetch(d.url + url, {
        method: verb,
        headers: { 'content-type': 'application/json' },
        body: verb === 'POST' ? '{}' : undefined,
      })
      // A path nobody serves falls to the admin API, which asks for a credential.
      expect(res.status, route).not.toBe(401)
    }
  })
})
