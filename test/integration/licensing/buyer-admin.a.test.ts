import crypto from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { FakeRateSources } from '../../fakes/rates'
import { fiatToSats, toCentibps } from '../../../src-main/licensing/rates'

const fake = new FakeRateSources()
let d: TestDaemon

const post = (path: string, body: unknown) =>
  fetch(d.url + path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) })
const admin = async (path: string, method = 'GET', body?: unknown) => {
  const res = await d.admin(path, { method, body: body === undefined ? undefined : JSON.stringify(body) })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

beforeAll(async () => {
  await fake.start()
  d = await startDaemon({ env: fake.env })
})
afterAll(async () => {
  await d?.stop()
  await fake.stop()
})

describe('licensing admin API', () => {
  it('needs the admin credential', async () => {
    const res = await fetch(d.url + '/v1/admin/products')
    expect(res.status).toBe(401)
    expect(await res.json()).toMatchObject({ code: 'unauthorized' })
  })

  it('manages products, the tier ladder and discount codes', async () => {
    const created = await admin('/v1/admin/products', 'POST', { slug: 'editor', name: 'Editor', price_value: 50_000 })
    expect(created).toMatchObject({ status: 200, body: { slug: 'editor', price_currency: 'SAT', price_sats: 50_000 } })
    const id = created.body.id as string
    const pro = await admin(`/v1/admin/products/${id}/policies`, 'POST', {
      slug: 'pro',
      name: 'Pro',
      tier_rank: 2,
      price_value_override: 90_000,
      entitlements: ['pro', 'sync'],
      max_machines: 3,
      highlighted: true,
    })
    expect(pro).toMatchObject({ status: 200, body: { slug: 'pro', price_value: 90_000, max_machines: 3 } })
    expect(
      await admin(`/v1/admin/policies/${pro.body.id as string}`, 'PATCH', { description: 'For teams <b>' }),
    ).toMatchObject({
      body: { description: 'For teams <b>' },
    })
    expect((await admin(`/v1/admin/products/${id}/policies`)).body).toMatchObject([
      { slug: 'pro' },
      { slug: 'default' },
    ])
    expect(await admin('/v1/admin/products', 'POST', { slug: 'editor', name: 'Again' })).toMatchObject({
      status: 409,
      body: { code: 'conflict' },
    })
    expect(await admin('/v1/admin/products', 'POST', { slug: 'Bad Slug!', name: 'x' })).toMatchObject({
      status: 400,
      body: { code: 'bad_input' },
    })
    const code = await admin('/v1/admin/discount-codes', 'POST', {
      code: 'LAUNCH',
      kind: 'percent',
      value: 20,
      product_id: id,
    })
    expect(code).toMatchObject({ status: 200, body: { code: 'LAUNCH', redemption_count: 0 } })
    const quote = await admin('/v1/admin/quote', 'POST', { product: 'editor', policy: 'pro', code: 'launch' })
    expect(quote.body).toMatchObject({
      listed_currency: 'SAT',
      base_value: 90_000,
      listed_value: 72_000,
      amount_sats: 72_000,
    })
  })

  it('prices fiat tiers from the rate sources and reports them', async () => {
    await admin('/v1/admin/products', 'POST', {
      slug: 'usd-app',
      name: 'USD App',
      price_currency: 'USD',
      price_value: 1999,
    })
    const q = await admin('/v1/admin/quote', 'POST', { product: 'usd-app' })
    const rate = toCentibps(fake.kraken.rates.USD.toFixed(5))
    expect(q.body).toMatchObject({
      listed_currency: 'USD',
      listed_value: 1999,
      amount_sats: fiatToSats(1999, rate),
      exchange_rate_centibps: rate,
      exchange_rate_source: 'kraken',
    })
    const rates = await admin('/v1/admin/rates?refresh=true')
    expect(rates.body.rates).toEqual(
      expect.arrayContaining([expect.objectContaining({ currency: 'USD', centibps: rate, source: 'kraken' })]),
    )
    expect((rates.body.sources as { name: string }[]).map((s) => s.name)).toEqual(['kraken', 'coinbase', 'coingecko'])
    // The public tier list reports the listed unit (cents for USD), as the client SDKs document price_sats; the product's base price is sats.
    const tiers = (await (await fetch(d.url + '/v1/products/usd-app/policies')).json()) as {
      product: { base_price_sats: number }
      policies: { price_sats: number; price_currency: string; price_value: number }[]
    }
    expect(tiers.policies[0]).toMatchObject({
      price_currency: 'USD',
      price_value: 1999,
      price_sats: 1999,
    })
    expect(tiers.product.base_price_sats).toBe(fiatToSats(1999, rate))
  })
})

describe('licensing buyer API', () => {
  let productId = ''
  let key = ''
  let licenseId = ''

  beforeAll(async () => {
    const p = await admin('/v1/admin/products', 'POST', { slug: 'tool', name: 'Tool', price_value: 1000 })
    productId = p.body.id as string
    const pol = await admin(`/v1/admin/products/${productId}/policies`, 'POST', {
      slug: 'duo',
      name: 'Duo',
      max_machines: 2,
      entitlements: ['pro'],
    })
    const issued = await admin('/v1/admin/licenses', 'POST', {
      product_id: productId,
      policy_id: pol.body.id,
      buyer_email: 'buyer@example.com',
    })
    expect(issued.status).toBe(200)
    key = issued.body.license_key as string
    licenseId = (issued.body.license as { id: string }).id
  })

  it('serves the public key, products and tiers in the client SDK shapes', async () => {
    const pk = (await (await fetch(d.url + '/v1/pubkey')).json()) as { public_key_pem: string }
    expect(pk.public_key_pem).toMatch(/^-----BEGIN PUBLIC KEY-----/)
    expect(crypto.verify(null, Buffer.from('x'), pk.public_key_pem, Buffer.alloc(64))).toBe(false)
    const list = (await (await fetch(d.url + '/v1/products')).json()) as { products: { slug: string }[] }
    expect(list.products.map((p) => p.slug)).toContain('tool')
    const one = await (await fetch(d.url + '/v1/products/tool')).json()
    expect(one).toMatchObject({
      slug: 'tool',
      name: 'Tool',
      price_sats: 1000,
      base_price_sats: 1000,
      price_currency: 'SAT',
    })
    const tiers = (await (await fetch(d.url + '/v1/products/tool/policies')).json()) as {
      product: object
      policies: object[]
    }
    expect(tiers.product).toMatchObject({ slug: 'tool', base_price_sats: 1000, entitlements_catalog: [] })
    expect(tiers.policies).toContainEqual(
      expect.objectContaining({
        slug: 'duo',
        price_sats: 1000,
        duration_seconds: 0,
        max_machines: 2,
        is_trial: false,
        entitlements: ['pro'],
        highlighted: false,
        is_recurring: false,
        renewal_period_days: 0,
        trial_days: 0,
      }),
    )
    const missing = await fetch(d.url + '/v1/products/nope')
    expect(missing.status).toBe(404)
    expect(await missing.json()).toMatchObject({ ok: false, error: 'not_found' })
  })

  it('validate always answers 200', async () => {
    const ok = await post('/v1/validate', { key, product_slug: 'tool' })
    expect(ok.status).toBe(200)
    expect(await ok.json()).toMatchObject({
      ok: true,
      license_id: licenseId,
      product_slug: 'tool',
      entitlements: ['pro'],
      status: 'active',
    })
    for (const [body, reason] of [
      [{}, 'bad_format'],
      [{ key: 'garbage' }, 'bad_format'],
      [{ key: 12345 }, 'bad_format'],
      [{ key: key.slice(0, 10) + (key[10] === 'A' ? 'B' : 'A') + key.slice(11) }, 'bad_signature'],
      [{ key, product_slug: 'editor' }, 'product_mismatch'],
      [{ key, fingerprint: { nested: true } }, 'bad_format'],
    ] as const) {
      const res = await post('/v1/validate', body)
      expect(res.status).toBe(200)
      expect(await res.json()).toMatchObject({ ok: false, reason })
    }
  })

  it('machines: activate to the limit, then too_many_machines; garbage keys get 401', async () => {
    expect(
      await (await post('/v1/machines/activate', { key, fingerprint: 'fp-1', hostname: 'a' })).json(),
    ).toMatchObject({ ok: true, active_count: 1, max_machines: 2 })
    expect(await (await post('/v1/validate', { key, fingerprint: 'fp-2' })).json()).toMatchObject({
      ok: true,
      machine_id: expect.any(String),
    })
    expect(await (await post('/v1/machines/activate', { key, fingerprint: 'fp-3' })).json()).toMatchObject({
      ok: false,
      reason: 'too_many_machines',
      active_count: 2,
    })
    expect(await (await post('/v1/machines/heartbeat', { key, fingerprint: 'fp-1' })).json()).toMatchObject({
      ok: true,
    })
    expect(await (await post('/v1/machines/deactivate', { key, fingerprint: 'fp-1' })).json()).toMatchObject({
      ok: true,
      active_count: 1,
    })
    for (const path of ['/v1/machines/activate', '/v1/machines/heartbeat', '/v1/machines/deactivate', '/v1/recover']) {
      const res = await post(path, { key: 'LIC1-AAAA-BBBB', fingerprint: 'fp' })
      expect(res.status).toBe(401)
      expect(await res.json()).toEqual({ ok: false, error: 'unauthorized', message: 'invalid license key' })
    }
    const machines = await admin(`/v1/admin/machines?license_id=${licenseId}&include_inactive=true`)
    expect(machines.body).toHaveLength(2)
  })

  it('recover returns the current state and a fresh key; revoke shows in validate and the audit log', async () => {
    const r = (await (await post('/v1/recover', { key })).json()) as {
      license_key: string
      status: string
      entitlements: string[]
    }
    expect(r).toMatchObject({
      ok: true,
      status: 'active',
      entitlements: ['pro'],
      product_slug: 'tool',
      policy_slug: 'duo',
    })
    expect(await (await post('/v1/validate', { key: r.license_key })).json()).toMatchObject({ ok: true })
    expect(await admin(`/v1/admin/licenses/${licenseId}/suspend`, 'POST', { reason: 'check' })).toMatchObject({
      body: { status: 'suspended' },
    })
    expect(await (await post('/v1/validate', { key })).json()).toMatchObject({ ok: false, reason: 'suspended' })
    expect(await admin(`/v1/admin/licenses/${licenseId}/reinstate`, 'POST', {})).toMatchObject({
      body: { status: 'active' },
    })
    expect(await admin(`/v1/admin/licenses/${licenseId}/revoke`, 'POST', { reason: 'refund' })).toMatchObject({
      body: { status: 'revoked' },
    })
    expect(await (await post('/v1/validate', { key })).json()).toMatchObject({ ok: false, reason: 'revoked' })
    const audit = await admin(`/v1/admin/audit?target_id=${licenseId}`)
    expect((audit.body as unknown as { action: string }[]).map((a) => a.action)).toEqual([
      'license.revoke',
      'license.reinstate',
      'license.suspend',
      'license.recover',
      'license.issue',
    ])
    const search = await admin('/v1/admin/licenses?q=buyer@example.com')
    expect(search.body).toMatchObject({
      total: 1,
      licenses: [{ id: licenseId, status: 'revoked', active_machines: 1 }],
    })
  })

  it('redeem: free codes issue keys; expired, capped and other-product codes are clear errors', async () => {
    const now = Date.now()
    await admin('/v1/admin/discount-codes', 'POST', {
      code: 'FREEBIE',
      kind: 'free_license',
      max_redemptions: 1,
      product_id: productId,
    })
    await admin('/v1/admin/discount-codes', 'POST', { code: 'STALE', kind: 'free_license', expires_at: now - 1000 })
    const ok = await post('/v1/redeem', { product: 'tool', code: 'FREEBIE', buyer_email: 'x@example.com' })
    expect(ok.status).toBe(200)
    const body = (await ok.json()) as {
      license_key: string
      license_id: string
      invoice_id: string
      redemption_id: string
    }
    expect(await (await post('/v1/validate', { key: body.license_key })).json()).toMatchObject({
      ok: true,
      license_id: body.license_id,
    })
    for (const [req, status, error] of [
      [{ product: 'tool', code: 'FREEBIE' }, 409, 'discount_exhausted'],
      [{ product: 'tool', code: 'STALE' }, 400, 'discount_expired'],
      [{ product: 'editor', code: 'FREEBIE' }, 400, 'discount_not_applicable'],
      [{ product: 'tool', code: 'UNKNOWN' }, 404, 'discount_not_found'],
    ] as const) {
      const res = await post('/v1/redeem', req)
      expect(res.status).toBe(status)
      expect(await res.json()).toMatchObject({ ok: false, error, message: expect.any(String) })
    }
  })

  it('concurrent redemptions never overshoot a cap', async () => {
    await admin('/v1/admin/discount-codes', 'POST', { code: 'THREE', kind: 'free_license', max_redemptions: 3 })
    // Earlier tests spent some of this address's redeem allowance (10 a minute), so the rest of the
    // calls are either refused for the cap (409) or rate-limited (429); never a fourth license.
    const results = await Promise.all(
      Array.from({ length: 5 }, () => post('/v1/redeem', { product: 'editor', code: 'THREE' })),
    )
    const statuses = results.map((r) => r.status).sort()
    expect(statuses.filter((st) => st === 200)).toHaveLength(3)
    expect(statuses.filter((st) => st !== 200).every((st) => st === 409 || st === 429)).toBe(true)
    expect(statuses).toContain(409)
    const codes = (await admin('/v1/admin/discount-codes?q=THREE')).body as unknown as {
      discounts: { code: string; redemption_count: number }[]
    }
    expect(codes.discounts.find((c) => c.code === 'THREE')?.redemption_count).toBe(3)
  })

  it('analytics counts issued licenses and active machines', async () => {
    const a = await admin('/v1/admin/analytics?days=7')
    expect(a.status).toBe(200)
    const issued = (a.body.licenses_issued as { product_slug: string; count: number }[]).filter(
      (r) => r.product_slug === 'tool',
    )
    expect(issued.reduce((s, r) => s + r.count, 0)).toBe(2)
    expect(a.body.active_machines).toBe(0)
  })

  it('an imported issuer key replaces the old one: old keys stop verifying, new ones verify', async () => {
    const other = crypto.generateKeyPairSync('ed25519')
    const res = await admin('/v1/admin/issuer-key', 'POST', {
      private_key_pem: other.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    })
    expect(res.body.public_key_pem).toBe(other.publicKey.export({ format: 'pem', type: 'spki' }).toString())
    expect(await (await post('/v1/validate', { key })).json()).toMatchObject({ ok: false, reason: 'bad_signature' })
    expect(await admin('/v1/admin/issuer-key', 'POST', { private_key_pem: 'nope' })).toMatchObject({ status: 400 })
    const logs = d.logs.lines.join('\n')
    expect(logs).not.toContain('PRIVATE KEY')
  })
})

describe('public rate limit', () => {
  it('limits per client address: 429 with Retry-After, and validate answers rate_limited', async () => {
    const small = await startDaemon({ env: { ...fake.env, LICENSING_RATE_LIMIT: '3' } })
    try {
      for (let i = 0; i < 3; i++) expect((await fetch(small.url + '/v1/pubkey')).status).toBe(200)
      const limited = await fetch(small.url + '/v1/pubkey')
      expect(limited.status).toBe(429)
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
      expect(await limited.json()).toMatchObject({ ok: false, error: 'rate_limited' })
      const v = await fetch(small.url + '/v1/validate', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: '{"key":"x"}',
      })
      expect(v.status).toBe(200)
      expect(await v.json()).toEqual({ ok: false, reason: 'rate_limited' })
      // The admin surface is not limited by it.
      expect((await small.admin('/v1/admin/products')).status).toBe(200)
    } finally {
      await small.stop()
    }
  })
})
