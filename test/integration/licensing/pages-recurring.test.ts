import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { FakeBtcpay } from '../../fakes/btcpay'

let d: TestDaemon
let btcpay: FakeBtcpay | undefined

const SCRIPT = `<script>alert("x")</script>`

beforeAll(async () => {
  d = await startDaemon({ env: { LICENSING_RATE_LIMIT: '0' } })
  const res = await d.admin('/v1/admin/products', {
    method: 'POST',
    body: JSON.stringify({ slug: 'subs', name: 'Subs', description: '', price_currency: 'USD', price_value: 900 }),
  })
  const product = (await res.json()) as { id: string }
  const pol = await d.admin(`/v1/admin/products/${product.id}/policies`, {
    method: 'POST',
    body: JSON.stringify({
      slug: 'monthly',
      name: `Monthly ${SCRIPT}`,
      is_recurring: true,
      renewal_period_days: 30,
      trial_days: 14,
      is_trial: true,
    }),
  })
  expect(pol.status).toBe(200)
})

afterAll(async () => {
  await d?.stop()
  await btcpay?.stop()
})

describe('buy page for a recurring tier', () => {
  it('shows the price per period and the free trial, with the tier name escaped', async () => {
    const res = await fetch(`${d.url}/buy/subs`)
    expect(res.status).toBe(200)
    const html = await res.text()
    expect(html).toContain('$9.00 every 30 days, 14-day free trial')
    expect(html).toContain('renews every 30 days until cancelled')
    expect(html).toContain('Monthly &lt;script&gt;')
    expect(html.split('<script src="/buy/assets/pages.js" defer></script>').join('')).not.toMatch(/<script/i)
  })
})

describe('thank-you and recover pages for a subscription', () => {
  let key = ''

  beforeAll(async () => {
    const res = await d.admin('/v1/admin/products', {
      method: 'POST',
      body: JSON.stringify({ slug: 'ladder', name: 'Ladder', description: '', price_currency: 'SAT', price_value: 0 }),
    })
    const product = (await res.json()) as { id: string }
    for (const tier of [
      {
        slug: 'starter',
        name: 'Starter',
        tier_rank: 1,
        is_recurring: true,
        renewal_period_days: 30,
        highlighted: true,
      },
      {
        slug: 'team',
        name: `Team ${SCRIPT}`,
        tier_rank: 2,
        price_currency_override: 'SAT',
        price_value_override: 5000,
      },
    ]) {
      const pol = await d.admin(`/v1/admin/products/${product.id}/policies`, {
        method: 'POST',
        body: JSON.stringify(tier),
      })
      expect(pol.status).toBe(200)
    }
    const buy = await fetch(`${d.url}/buy/ladder`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ policy: 'starter' }).toString(),
      redirect: 'manual',
    })
    expect(buy.status).toBe(303)
    const thanks = await (await fetch(d.url + buy.headers.get('location')!)).text()
    key = /id="license-key"[^>]*>([^<]+)</.exec(thanks)?.[1] ?? ''
    expect(key).not.toBe('')
    expect(thanks).toContain('data-status="active"')
  })

  it('recover shows the subscription state, the cancel hint and the upgrade tiers, escaped', async () => {
    const res = await fetch(`${d.url}/recover`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ key }).toString(),
    })
    expect(res.status).toBe(200)
    const html = await res.text()
    expect(html).toMatch(/Active: renews on \d{4}-\d{2}-\d{2}/)
    expect(html).toContain('Cancelling stops further charges')
    expect(html).toContain('action="/buy/upgrade/quote"')
    expect(html).toContain('value="team"')
    expect(html).toContain('Team &lt;script&gt;')
    expect(html).not.toContain('value="starter"')
    expect(html.split('<script src="/buy/assets/pages.js" defer></script>').join('')).not.toMatch(/<script/i)
  })

  it('the upgrade form quotes first; a garbage key is refused without saying whether the tier exists', async () => {
    const post = (path: string, fields: Record<string, string>) =>
      fetch(d.url + path, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(fields).toString(),
      })
    const quote = await post('/buy/upgrade/quote', { key, target: 'team' })
    expect(quote.status).toBe(200)
    const html = await quote.text()
    expect(html).toContain('Upgrade to team')
    expect(html).toContain('action="/buy/upgrade/pay"')

    const bad = await post('/buy/upgrade/quote', { key: `garbage${SCRIPT}`, target: 'team' })
    const none = await post('/buy/upgrade/quote', { key: `garbage${SCRIPT}`, target: 'no-such-tier' })
    expect(bad.status).toBe(401)
    expect(none.status).toBe(401)
    const [a, b] = [await bad.text(), await none.text()]
    expect(a).toBe(b)
    expect(a).not.toMatch(/<script>/i)
  })

  it('paying sends the buyer to the provider checkout for the server-computed charge', async () => {
    btcpay = await new FakeBtcpay().start()
    const conn = await d.admin('/v1/admin/btcpay/connect', {
      method: 'POST',
      body: JSON.stringify({
        base_url: btcpay.url,
        store_id: btcpay.storeId,
        api_key: btcpay.apiKey,
        webhook_secret: btcpay.webhookSecret,
      }),
    })
    expect(conn.status).toBe(200)
    const res = await fetch(`${d.url}/buy/upgrade/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ key, target: 'team', amount_sats: '1', proration_charge_value: '1' }).toString(),
    })
    expect(res.status).toBe(200)
    const html = await res.text()
    const invoiceId = /\/thank-you\?invoice=([0-9a-f-]{36})/.exec(html)?.[1]
    expect(invoiceId).toBeDefined()
    expect(html).toContain(`${btcpay.url}/i/`)
    const invoice = (await (await d.admin(`/v1/admin/invoices/${invoiceId}`)).json()) as { amount_sats: number }
    expect(invoice.amount_sats).toBeGreaterThan(1)
  })
})
