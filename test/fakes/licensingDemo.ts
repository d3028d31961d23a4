import { createHmac } from 'node:crypto'
import { FakeBtcpay } from './btcpay'
import { LoopbackServer } from './loopback'
import { FakeRateSources } from './rates'
import { FakeZaprite } from './zaprite'

/**
 * Loopback payment providers and rate sources for the demo and the browser suite, plus a seed
 * that gives the Licensing view something to show: two products with a tier ladder, a connected
 * BTCPay Server, a few paid purchases, a discount code and an outbound endpoint. Nothing leaves
 * the machine: pass `env` (RATE_SOURCES) to the daemon.
 */
const RECEIVER_SECRET = 'demo-outbound-secret-0123456789'

export interface LicensingSim {
  readonly btcpay: FakeBtcpay
  /** The operator's own system as the demo imagines it: accepts correctly signed outbound webhooks. */
  readonly receiver: LoopbackServer
  readonly zaprite: FakeZaprite
  readonly rates: FakeRateSources
  readonly env: { RATE_SOURCES: string }
  seed(baseUrl: string, adminToken: string): Promise<void>
  close(): Promise<void>
}

type AdminCall = <T>(method: string, path: string, body?: unknown) => Promise<T>

/** The demo tier's top-up pack: 2,000 more tokens this month for 5,000 sats. */
const DEMO_TOP_UP = { tokens: 2000, price_value: 5000 }

/**
 * The demo's access product (issue 45): a monthly tier selling the demo's engines with a small
 * token quota and a top-up pack, so a key bought through the demo checkout works with any OpenAI
 * client until the quota runs out, then says why, and works again once a top-up is bought. Seeded
 * once, also into a demo data dir from before it existed (one seeded before the pack gets it).
 */
async function seedAccessProduct(call: AdminCall): Promise<void> {
  const existing = await call<{ products: { id: string; slug: string }[] }>('GET', '/v1/admin/products?q=cluster-api')
  const found = existing.products.find((p) => p.slug === 'cluster-api')
  if (found) return addTopUpPack(call, found.id)
  const api = await call<{ id: string }>('POST', '/v1/admin/products', {
    slug: 'cluster-api',
    name: 'Cluster API',
    description: 'The demo cluster’s models through any OpenAI client: 2,000 tokens a month, more when you need them.',
    price_currency: 'SAT',
    price_value: 21_000,
  })
  const [monthly] = await call<{ id: string }[]>('GET', `/v1/admin/products/${api.id}/policies`)
  await call('PATCH', `/v1/admin/policies/${monthly!.id}`, {
    name: 'Monthly',
    is_recurring: true,
    renewal_period_days: 30,
    access: { tokens_per_period: 2000, requests_per_minute: 30, concurrent_streams: 2, top_up: DEMO_TOP_UP },
  })
}

/** A demo seeded before the top-up pack existed: its quota tiers get the pack. */
async function addTopUpPack(call: AdminCall, productId: string): Promise<void> {
  type Tier = { id: string; access: { tokens_per_period: number | null; top_up?: unknown } | null }
  for (const tier of await call<Tier[]>('GET', `/v1/admin/products/${productId}/policies`)) {
    if (tier.access?.tokens_per_period == null || tier.access.top_up) continue
    await call('PATCH', `/v1/admin/policies/${tier.id}`, { access: { ...tier.access, top_up: DEMO_TOP_UP } })
  }
}

export async function startLicensingSim(): Promise<LicensingSim> {
  const btcpay = await new FakeBtcpay().start()
  const zaprite = await new FakeZaprite().start()
  const rates = await new FakeRateSources().start()
  const receiver = await new LoopbackServer((req) => {
    const expected = `sha256=${createHmac('sha256', RECEIVER_SECRET).update(req.body).digest('hex')}`
    return { status: req.headers['x-tandem-signature'] === expected ? 204 : 401 }
  }).start()

  async function seed(baseUrl: string, adminToken: string): Promise<void> {
    const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
      const res = await fetch(baseUrl + path, {
        method,
        headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      const text = await res.text()
      if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${text}`)
      return JSON.parse(text) as T
    }
    btcpay.webhookUrl = `${baseUrl}/v1/btcpay/webhook`
    zaprite.webhookUrl = `${baseUrl}/v1/zaprite/webhook`
    // The fake listens on a new port each run: reconnect every time, seed only once.
    await call('POST', '/v1/admin/btcpay/connect', {
      base_url: btcpay.url,
      store_id: btcpay.storeId,
      api_key: btcpay.apiKey,
      webhook_secret: btcpay.webhookSecret,
    })
    await seedAccessProduct(call)
    const existing = await call<{ products: { slug: string }[] }>('GET', '/v1/admin/products?q=notes')
    if (existing.products.some((p) => p.slug === 'notes')) {
      const found = await call<{ endpoints: { id: string; description: string }[] }>(
        'GET',
        '/v1/admin/webhook-endpoints?q=Demo%20receiver',
      )
      const demo = found.endpoints.find((e) => e.description === 'Demo receiver')
      if (demo) await call('PATCH', `/v1/admin/webhook-endpoints/${demo.id}`, { url: `${receiver.url}/hooks/tandem` })
      return
    }

    const notes = await call<{ id: string }>('POST', '/v1/admin/products', {
      slug: 'notes',
      name: 'Notes Pro',
      description: 'Private notes that sync between your machines.',
      price_currency: 'SAT',
      price_value: 50_000,
      entitlements_catalog: [
        { slug: 'sync', name: 'Sync', description: 'Sync between machines' },
        { slug: 'export', name: 'Export', description: 'PDF and Markdown export' },
      ],
    })
    const [standard] = await call<{ id: string }[]>('GET', `/v1/admin/products/${notes.id}/policies`)
    await call('PATCH', `/v1/admin/policies/${standard!.id}`, { tier_rank: 1, entitlements: ['export'] })
    await call('POST', `/v1/admin/products/${notes.id}/policies`, {
      slug: 'team',
      name: 'Team',
      description: 'Five seats with sync.',
      tier_rank: 2,
      price_value_override: 180_000,
      max_machines: 5,
      entitlements: ['sync', 'export'],
      highlighted: true,
    })
    await call('POST', '/v1/admin/products', {
      slug: 'studio',
      name: 'Studio',
      description: 'Priced in dollars, paid in bitcoin.',
      price_currency: 'USD',
      price_value: 4_900,
    })
    await call('POST', '/v1/admin/discount-codes', {
      code: 'LAUNCH20',
      kind: 'percent',
      value: 20,
      max_redemptions: 100,
    })
    await call('POST', '/v1/admin/webhook-endpoints', {
      url: `${receiver.url}/hooks/tandem`,
      secret: RECEIVER_SECRET,
      events: ['license.issued'],
      description: 'Demo receiver',
    })
    const buys = [
      { product: 'notes', buyer_email: 'ada@example.com' },
      { product: 'notes', policy: 'team', buyer_email: 'grace@example.com', code: 'LAUNCH20' },
      { product: 'studio', buyer_email: 'linus@example.com' },
      { product: 'notes', buyer_email: 'ken@example.com' },
    ]
    for (const [i, b] of buys.entries()) {
      const res = await fetch(`${baseUrl}/v1/purchase`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(b),
      })
      const p = (await res.json()) as { provider_invoice_id?: string }
      // The last one stays unpaid, so the invoices list shows a pending checkout too.
      if (res.ok && p.provider_invoice_id && i < buys.length - 1) await btcpay.pay(p.provider_invoice_id)
    }
  }

  return {
    btcpay,
    receiver,
    zaprite,
    rates,
    env: rates.env,
    seed,
    async close() {
      await Promise.all([btcpay.stop(), zaprite.stop(), rates.stop(), receiver.stop()])
    },
  }
}
