import { describe, expect, it } from 'vitest'
import { accessTier, adminPost, chatAs, demoShopRig, issueAccess } from './accessRig'

/**
 * Issue 45: the buyer buys a top-up with the license key (`POST /v1/top-ups`), pays it like any
 * purchase (here the loopback BTCPay), and the tokens count at once, even over quota.
 */
const demo = demoShopRig()

const PACK = { tokens: 1000, price_value: 700 }

function post(path: string, body: unknown): Promise<Response> {
  return fetch(`${demo.rig.daemon.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
}

function form(path: string, fields: Record<string, string>): Promise<Response> {
  return fetch(`${demo.rig.daemon.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  })
}

interface Started {
  license_id: string
  invoice_id: string
  provider_invoice_id: string
  checkout_url: string
  tokens: number
  listed_currency: string
  listed_value: number
  amount_sats: number
}

async function access(licenseKey: string): Promise<{ top_up_tokens: number; tokens_remaining: number }> {
  const v = (await (await post('/v1/validate', { key: licenseKey })).json()) as {
    access: { top_up_tokens: number; tokens_remaining: number }
  }
  return v.access
}

async function chatUntilRefused(secret: string): Promise<Response> {
  for (let i = 0; i < 20; i++) {
    const res = await chatAs(demo.rig, secret)
    if (res.status !== 200) return res
    await res.arrayBuffer()
    await new Promise((r) => setTimeout(r, 20))
  }
  throw new Error('still answered after 20 chats')
}

describe('a bought top-up', () => {
  it('bought while over quota works at once; its settlement replayed adds once; revenue counts it', async () => {
    const lic = await issueAccess(
      demo.rig,
      await accessTier(demo.rig, 'topup-a', { tokens_per_period: 20, top_up: PACK }),
    )
    expect((await chatUntilRefused(lic.secret)).status).toBe(429)

    const res = await post('/v1/top-ups', { license_key: lic.licenseKey })
    expect(res.status).toBe(200)
    const started = (await res.json()) as Started
    expect(started).toMatchObject({ license_id: lic.id, tokens: 1000, listed_currency: 'SAT', listed_value: 700 })
    expect(started.amount_sats).toBe(700)
    expect((await access(lic.licenseKey)).top_up_tokens).toBe(0)

    expect((await demo.shop.btcpay.pay(started.provider_invoice_id)).status).toBe(200)
    const again = await chatAs(demo.rig, lic.secret)
    expect(again.status).toBe(200)
    await again.arrayBuffer()
    expect((await access(lic.licenseKey)).top_up_tokens).toBe(1000)

    // BTCPay delivers the same settlement again: the tokens are added once.
    expect((await demo.shop.btcpay.sendEvent('InvoiceSettled', started.provider_invoice_id)).status).toBe(200)
    expect((await access(lic.licenseKey)).top_up_tokens).toBe(1000)

    const thanks = await (await fetch(`${demo.rig.daemon.url}/thank-you?invoice=${started.invoice_id}`)).text()
    expect(thanks).toContain('1,000 tokens were added to this period of your license')

    const report = (await (await demo.rig.daemon.admin('/v1/admin/access?limit=500')).json()) as {
      licenses: { license_id: string; revenue_sats: number; top_up_tokens: number }[]
    }
    expect(report.licenses.find((l) => l.license_id === lic.id)).toMatchObject({
      revenue_sats: 700,
      top_up_tokens: 1000,
    })
  })

  it('is priced in the tier’s currency through the same rates as a purchase', async () => {
    const p = (await (
      await adminPost(demo.rig, '/v1/admin/products', {
        slug: 'topup-usd',
        name: 'USD API',
        price_currency: 'USD',
        price_value: 250,
      })
    ).json()) as { id: string }
    const tier = (await (
      await adminPost(demo.rig, `/v1/admin/products/${p.id}/policies`, {
        slug: 'api',
        name: 'API',
        price_value_override: 250,
        access: { tokens_per_period: 100, top_up: { tokens: 500, price_value: 250 } },
      })
    ).json()) as { id: string }
    const bought = (await (await post('/v1/purchase', { product: 'topup-usd', policy: 'api' })).json()) as {
      amount_sats: number
    }
    const lic = await issueAccess(demo.rig, { productId: p.id, tierId: tier.id })
    const started = (await (await post('/v1/top-ups', { license_key: lic.licenseKey })).json()) as Started
    expect(started).toMatchObject({ listed_currency: 'USD', listed_value: 250 })
    expect(bought.amount_sats).toBeGreaterThan(0)
    expect(started.amount_sats).toBe(bought.amount_sats)
  })

  it('is refused for a revoked license, a tier without a pack, and a request without a key', async () => {
    const noPack = await issueAccess(demo.rig, await accessTier(demo.rig, 'topup-none', { tokens_per_period: 20 }))
    const refused = await post('/v1/top-ups', { license_key: noPack.licenseKey })
    expect(refused.status).toBe(409)
    expect(JSON.stringify(await refused.json())).toContain('tier api sells no top-up')

    const revoked = await issueAccess(
      demo.rig,
      await accessTier(demo.rig, 'topup-revoked', { tokens_per_period: 20, top_up: PACK }),
    )
    expect((await adminPost(demo.rig, `/v1/admin/licenses/${revoked.id}/revoke`, { reason: 'test' })).status).toBe(200)
    expect((await post('/v1/top-ups', { license_key: revoked.licenseKey })).status).toBe(401)

    const missing = await post('/v1/top-ups', {})
    expect(missing.status).toBe(400)
    expect(JSON.stringify(await missing.json())).toContain('license_key')
  })

  it('a pack that is no pack is refused with 400 naming the field', async () => {
    const p = (await (await adminPost(demo.rig, '/v1/admin/products', { slug: 'topup-bad', name: 'Bad' })).json()) as {
      id: string
    }
    const tierWith = (top_up: unknown, extra: object = { tokens_per_period: 100 }) =>
      adminPost(demo.rig, `/v1/admin/products/${p.id}/policies`, {
        slug: 'api',
        name: 'API',
        access: { ...extra, top_up },
      })
    const cases: [unknown, object | undefined, string][] = [
      [{ tokens: 100, price_value: 0 }, undefined, 'access.top_up.price_value'],
      [{ tokens: 100, price_value: -5 }, undefined, 'access.top_up.price_value'],
      [{ tokens: 0, price_value: 100 }, undefined, 'access.top_up.tokens'],
      [{ tokens: 100, price_value: 100 }, { requests_per_minute: 10 }, 'access.top_up'],
    ]
    for (const [pack, extra, field] of cases) {
      const res = await tierWith(pack, extra)
      expect(res.status).toBe(400)
      expect(((await res.json()) as { detail: string }).detail).toContain(field)
    }
  })

  it('is offered on the buyer’s /recover page, whose button opens the checkout', async () => {
    const lic = await issueAccess(
      demo.rig,
      await accessTier(demo.rig, 'topup-page', { tokens_per_period: 20, top_up: PACK }),
    )
    const page = await (await form('/recover', { key: lic.licenseKey })).text()
    expect(page).toContain('Buy 1,000 more tokens for 700 sats')
    const res = await form('/buy/top-up/pay', { key: lic.licenseKey })
    expect(res.status).toBe(200)
    const checkout = await res.text()
    expect(checkout).toContain(`${demo.shop.btcpay.url}/i/`)
    expect(checkout).toMatch(/\/thank-you\?invoice=[0-9a-f-]{36}/)
    expect(checkout).toContain('which says when the tokens were added')

    const plain = await issueAccess(demo.rig, await accessTier(demo.rig, 'topup-page-none', { tokens_per_period: 20 }))
    expect(await (await form('/recover', { key: plain.licenseKey })).text()).not.toContain('more tokens for')
  })
})
