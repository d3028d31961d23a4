import OpenAI from 'openai'
import { describe, expect, it } from 'vitest'
import { demoShopRig, recoverPage } from './accessRig'

/**
 * Issue 45, item 6: the demo's shop sells access. Bought and paid through the demo's checkout, the
 * Cluster API tier's key works with the OpenAI client against the engines until its monthly tokens
 * run out, then the client gets OpenAI's insufficient_quota error saying when they reset; a top-up
 * bought and paid through the same checkout makes the same key work again at once.
 */
const SECRET = /tdm_[a-f0-9]{8}_[A-Za-z0-9_-]{43}/
const demo = demoShopRig()

describe('the demo’s access product', () => {
  it('sells a monthly key that answers the OpenAI client until its quota is spent, then says why, and a top-up revives it', async () => {
    const res = await fetch(`${demo.rig.daemon.url}/v1/purchase`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ product: 'cluster-api', buyer_email: 'ada@example.com' }),
    })
    expect(res.status).toBe(200)
    const bought = (await res.json()) as { invoice_id: string; provider_invoice_id: string }
    expect((await demo.shop.btcpay.pay(bought.provider_invoice_id)).status).toBe(200)
    const page = await (await fetch(`${demo.rig.daemon.url}/thank-you?invoice=${bought.invoice_id}`)).text()
    const secret = SECRET.exec(page)?.[0]
    expect(secret).toBeDefined()
    const licenseKey = /<pre id="license-key" class="key">([^<]+)<\/pre>/.exec(page)?.[1]
    expect(licenseKey).toBeDefined()

    const client = new OpenAI({ apiKey: secret!, baseURL: `${demo.rig.daemon.url}/v1`, maxRetries: 0 })
    const first = await client.chat.completions.create({
      model: 'sim/Qwen3-8B-Instruct',
      messages: [{ role: 'user', content: 'hello from the demo' }],
    })
    expect(first.usage?.total_tokens).toBeGreaterThan(0)

    // 2,000 tokens a month: a few long answers spend them (bounded).
    let refused: unknown = null
    for (let i = 0; i < 200 && refused === null; i++) {
      try {
        await client.chat.completions.create({
          model: 'sim/Qwen3-8B-Instruct',
          max_tokens: 64,
          messages: [{ role: 'user', content: 'tell me a long story about the cluster '.repeat(10) }],
        })
        await new Promise((r) => setTimeout(r, 10))
      } catch (err) {
        refused = err
      }
    }
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError)
    const e = refused as InstanceType<typeof OpenAI.RateLimitError>
    expect(e.code).toBe('insufficient_quota')
    expect(e.message).toMatch(/2000 tokens for this period.*resets at \d{4}-\d\d-\d\dT/)

    // The demo's top-up: 2,000 more tokens, bought with the license key and paid at the demo checkout.
    const top = await fetch(`${demo.rig.daemon.url}/v1/top-ups`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ license_key: licenseKey }),
    })
    expect(top.status).toBe(200)
    const topUp = (await top.json()) as { provider_invoice_id: string; tokens: number; amount_sats: number }
    expect(topUp).toMatchObject({ tokens: 2000, amount_sats: 5000 })
    expect((await demo.shop.btcpay.pay(topUp.provider_invoice_id)).status).toBe(200)
    const revived = await client.chat.completions.create({
      model: 'sim/Qwen3-8B-Instruct',
      messages: [{ role: 'user', content: 'hello again' }],
    })
    expect(revived.usage?.total_tokens).toBeGreaterThan(0)
  })
})

describe('the recover page of an access license', () => {
  it('shows the buyer the tokens used and left this period, and when they reset', async () => {
    const product = (await (await demo.rig.daemon.admin('/v1/admin/products?q=cluster-api')).json()) as {
      products: { id: string }[]
    }
    const issued = (await (
      await demo.rig.daemon.admin('/v1/admin/licenses', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ product_id: product.products[0]!.id }),
      })
    ).json()) as { license_key: string; gateway_key: string }
    const chat = await fetch(`${demo.rig.daemon.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${issued.gateway_key}` },
      body: JSON.stringify({ model: 'sim/Qwen3-8B-Instruct', messages: [{ role: 'user', content: 'one two three' }] }),
    })
    const used = ((await chat.json()) as { usage: { total_tokens: number } }).usage.total_tokens
    await new Promise((r) => setTimeout(r, 50))
    const page = await recoverPage(demo.rig, issued.license_key)
    const shown = /<dd id="access-tokens">\s*([^<]*?)\s*<\/dd>/.exec(page)?.[1]
    expect(shown).toBe(`${used} of 2,000 used, ${(2000 - used).toLocaleString('en')} left`)
    expect(page).toContain('Tokens reset')
  })
})
