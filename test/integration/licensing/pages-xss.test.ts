import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'

let d: TestDaemon

const SCRIPT = `<script>alert("x")</script>`
const IMG = `"><img src=x onerror=alert(1)>`
const OWN_SCRIPT = '<script src="/buy/assets/pages.js" defer></script>'

/** No tag an attacker put in survives: the only script tag is the page's own. */
function expectInert(html: string): void {
  const stripped = html.split(OWN_SCRIPT).join('')
  expect(stripped).not.toMatch(/<script/i)
  expect(stripped).not.toMatch(/<img/i)
}

async function page(path: string, init?: RequestInit): Promise<{ status: number; html: string; csp: string | null }> {
  const res = await fetch(d.url + path, { redirect: 'manual', ...init })
  return { status: res.status, html: await res.text(), csp: res.headers.get('content-security-policy') }
}

const form = (fields: Record<string, string>): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(fields).toString(),
})

beforeAll(async () => {
  d = await startDaemon({ env: { LICENSING_RATE_LIMIT: '0' } })
  const res = await d.admin('/v1/admin/products', {
    method: 'POST',
    body: JSON.stringify({
      slug: 'xss',
      name: `Evil ${SCRIPT}`,
      description: `Desc ${IMG}`,
      price_currency: 'SAT',
      price_value: 0,
    }),
  })
  const product = (await res.json()) as { id: string }
  const pol = await d.admin(`/v1/admin/products/${product.id}/policies`, {
    method: 'POST',
    body: JSON.stringify({ slug: 'pro', name: `Pro ${IMG}`, description: `Tier ${SCRIPT}`, highlighted: true }),
  })
  expect(pol.status).toBe(200)
})

afterAll(async () => {
  await d?.stop()
})

describe('public pages escape every value', () => {
  it('buy page: product name, description, tier name and description', async () => {
    const p = await page('/buy/xss')
    expect(p.status).toBe(200)
    expect(p.html).toContain('Evil &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;')
    expect(p.html).toContain('Tier &lt;script&gt;')
    expect(p.html).toContain('&quot;&gt;&lt;img src=x onerror=alert(1)&gt;')
    expectInert(p.html)
    expect(p.csp).toContain("script-src 'self'")
    expect(p.csp).toContain("default-src 'none'")
    expect(p.csp).not.toContain('unsafe-inline')
  })

  it('buy page errors echo the buyer input escaped', async () => {
    const p = await page(
      '/buy/xss',
      form({ policy: 'pro', buyer_email: `${IMG}${SCRIPT}`, code: SCRIPT, buyer_note: SCRIPT }),
    )
    expect(p.status).toBe(400)
    expect(p.html).toContain('role="alert"')
    expectInert(p.html)
    expect(p.html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;')
  })

  it('thank-you page: buyer note and email, product name', async () => {
    const res = await page(
      '/buy/xss',
      form({ policy: 'pro', buyer_email: 'buyer@example.com', buyer_note: `${SCRIPT}${IMG}` }),
    )
    expect(res.status).toBe(303)
    const loc = (
      await fetch(d.url + '/buy/xss', { ...form({ policy: 'pro', buyer_note: SCRIPT }), redirect: 'manual' })
    ).headers.get('location')!
    expect(loc).toMatch(/^\/thank-you\?invoice=[0-9a-f-]{36}$/)
    const p = await page(loc)
    expect(p.status).toBe(200)
    expect(p.html).toContain('Your note')
    expect(p.html).toMatch(/LIC1-[A-Z2-7]+-[A-Z2-7]+/)
    expect(p.html).toContain('data-copy="license-key"')
    expectInert(p.html)
    expect(p.csp).toContain("script-src 'self'")
  })

  it('thank-you page: the invoice id from the URL', async () => {
    for (const id of [SCRIPT, IMG, `"onmouseover="alert(1)`]) {
      const p = await page(`/thank-you?invoice=${encodeURIComponent(id)}`)
      expect(p.status).toBe(404)
      expectInert(p.html)
      expect(p.html).not.toContain('"onmouseover="')
    }
    const p = await page(`/thank-you?invoice=${encodeURIComponent(SCRIPT)}`)
    expect(p.html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;')
  })

  it('recover page echoes a bad key escaped and answers 401', async () => {
    const p = await page('/recover', form({ key: SCRIPT }))
    expect(p.status).toBe(401)
    expectInert(p.html)
    expect(p.html).toContain('&lt;script&gt;')
  })

  it('recover page shows the state and a fresh key for a real key', async () => {
    const loc = (await fetch(d.url + '/buy/xss', { ...form({ policy: 'pro' }), redirect: 'manual' })).headers.get(
      'location',
    )!
    const id = loc.split('=')[1]!
    const poll = (await (await fetch(`${d.url}/v1/purchase/${id}`)).json()) as { license_key: string }
    const p = await page('/recover', form({ key: poll.license_key }))
    expect(p.status).toBe(200)
    expect(p.html).toContain('<dd>active</dd>')
    expect(p.html).toMatch(/LIC1-/)
    expectInert(p.html)
  })

  it('an unknown product is a 404 page; assets are served with their types', async () => {
    expect((await page('/buy/nope')).status).toBe(404)
    const css = await fetch(`${d.url}/buy/assets/pages.css`)
    expect(css.headers.get('content-type')).toContain('text/css')
    const js = await fetch(`${d.url}/buy/assets/pages.js`)
    expect(js.headers.get('content-type')).toContain('javascript')
    expect(await js.text()).not.toContain('innerHTML')
  })
})
