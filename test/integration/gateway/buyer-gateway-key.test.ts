import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startRig, type GatewayRig } from './setup'

/**
 * The buyer's gateway key over HTTP (issue 45): a purchase's thank-you page shows it once, the
 * license key gets a new one (a stream on the old secret finishes, its next request is refused),
 * and a tier's changed access reaches the key at its next request.
 */
const MODEL = 'sim/Qwen3-8B-Instruct'
const SECRET = /tdm_[a-f0-9]{8}_[A-Za-z0-9_-]{43}/
let rig: GatewayRig

beforeAll(async () => {
  rig = await startRig({})
})
afterAll(() => rig.stop())

const send = async (path: string, body: unknown, verb = 'POST'): Promise<Response> =>
  rig.daemon.admin(path, { method: verb, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

const buyer = (path: string, body: unknown): Promise<Response> =>
  fetch(`${rig.daemon.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })

function chat(secret: string, stream = false): Promise<Response> {
  return fetch(`${rig.daemon.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
    body: JSON.stringify({ model: MODEL, stream, messages: [{ role: 'user', content: 'hello there' }] }),
  })
}

/** A free product whose tier sells access, bought through the buy page: the thank-you page's address. */
async function bought(slug: string): Promise<{ tierId: string; thankYou: string }> {
  const product = (await (await send('/v1/admin/products', { slug, name: slug, price_value: 0 })).json()) as {
    id: string
  }
  const tier = (await (
    await send(`/v1/admin/products/${product.id}/policies`, {
      slug: 'tier',
      name: 'Tier',
      access: { models: [MODEL], requests_per_minute: 100, concurrent_streams: 3 },
    })
  ).json()) as { id: string }
  const buy = await fetch(`${rig.daemon.url}/buy/${slug}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ policy: 'tier' }).toString(),
    redirect: 'manual',
  })
  expect(buy.status).toBe(303)
  return { tierId: tier.id, thankYou: rig.daemon.url + buy.headers.get('location')! }
}

const licenseKeyOn = (page: string): string => /id="license-key"[^>]*>([^<]+)</.exec(page)?.[1] ?? ''

describe('the buyer’s gateway key from a purchase', () => {
  it('is shown once on the thank-you page with the license key, and works; later views say it was shown', async () => {
    const { thankYou } = await bought('sold')
    const first = await (await fetch(thankYou)).text()
    expect(licenseKeyOn(first)).not.toBe('')
    const secret = SECRET.exec(first)?.[0]
    expect(secret).toBeDefined()
    expect((await chat(secret!)).status).toBe(200)

    const again = await (await fetch(thankYou)).text()
    expect(licenseKeyOn(again)).not.toBe('')
    expect(again).not.toMatch(SECRET)
    expect(again).toContain('is not shown again')
    // The page's poll answer never carries it, and the audit log keeps only its prefix.
    const invoice = new URL(thankYou).searchParams.get('invoice') ?? new URL(thankYou).searchParams.get('id')
    expect(await (await fetch(`${rig.daemon.url}/v1/purchase/${invoice}`)).text()).not.toMatch(SECRET)
    const audit = await (await rig.daemon.admin('/v1/admin/audit?limit=200')).text()
    expect(audit).toContain('license.gateway_key_rotated')
    expect(audit).not.toContain(secret!)
  })

  it('POST /v1/gateway-key rotates it: a stream on the old secret finishes, the old secret’s next request is refused', async () => {
    const { thankYou } = await bought('rotated')
    const page = await (await fetch(thankYou)).text()
    const old = SECRET.exec(page)![0]
    const licenseKey = licenseKeyOn(page)

    await rig.llm.setFault({ kind: 'slow', delayMs: 100 })
    try {
      const streaming = await chat(old, true)
      expect(streaming.status).toBe(200)
      const reader = streaming.body!.getReader()
      const firstChunk = await reader.read()
      expect(firstChunk.done).toBe(false)

      const res = await buyer('/v1/gateway-key', { license_key: licenseKey })
      expect(res.status).toBe(200)
      const fresh = (await res.json()) as { gateway_key: string; concurrent_streams: number | null }
      expect(fresh.gateway_key).toMatch(SECRET)
      expect(fresh.gateway_key).not.toBe(old)
      expect(fresh.concurrent_streams).toBe(3)

      let rest = new TextDecoder().decode(firstChunk.value)
      for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value)
      expect(rest).toContain('[DONE]')

      expect((await chat(old)).status).toBe(401)
      expect((await chat(fresh.gateway_key)).status).toBe(200)
    } finally {
      await rig.llm.setFault('none')
    }
  })

  it('POST /v1/gateway-key refuses a key that is not a license key', async () => {
    const res = await buyer('/v1/gateway-key', { license_key: 'LIC1-not-a-key' })
    expect(res.status).toBe(401)
    expect(await res.text()).not.toMatch(SECRET)
  })

  it('follows its tier: a tier that no longer sells access refuses it with 403, and new limits apply at once', async () => {
    const { tierId, thankYou } = await bought('followed')
    const secret = SECRET.exec(await (await fetch(thankYou)).text())![0]
    expect((await chat(secret)).status).toBe(200)

    expect((await send(`/v1/admin/policies/${tierId}`, { access: null }, 'PATCH')).status).toBe(200)
    const refused = await chat(secret)
    expect(refused.status).toBe(403)
    expect(await refused.text()).toContain('no longer includes API access')

    const limits = { models: [MODEL], requests_per_minute: 1 }
    expect((await send(`/v1/admin/policies/${tierId}`, { access: limits }, 'PATCH')).status).toBe(200)
    expect((await chat(secret)).status).toBe(200)
    const overRate = await chat(secret)
    expect(overRate.status).toBe(429)
    expect(Number(overRate.headers.get('retry-after'))).toBeGreaterThan(0)
  })

  it('POST /v1/gateway-key is rate-limited per address like /v1/recover', async () => {
    const answers: number[] = []
    for (let i = 0; i < 12; i++) answers.push((await buyer('/v1/gateway-key', { license_key: 'LIC1-x' })).status)
    expect(answers).toContain(429)
    expect((await buyer('/v1/recover', { license_key: 'LIC1-x' })).status).toBe(429)
  })
})
