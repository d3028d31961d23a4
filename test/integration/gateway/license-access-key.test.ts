import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startRig, type GatewayRig } from './setup'

/** A license on a tier that sells access comes with a gateway key bound to it (issue 45). */
const MODEL = 'sim/Qwen3-8B-Instruct'
let rig: GatewayRig

beforeAll(async () => {
  rig = await startRig({})
})
afterAll(() => rig.stop())

const send = async (path: string, body: unknown, verb = 'POST'): Promise<Response> =>
  rig.daemon.admin(path, { method: verb, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

function chat(secret: string, model: string): Promise<Response> {
  return fetch(`${rig.daemon.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello' }] }),
  })
}

/** A product with one tier selling `access`, through the admin API. */
async function accessTier(slug: string, access: object): Promise<{ product: { id: string }; tier: { id: string } }> {
  const product = (await (await send('/v1/admin/products', { slug, name: slug, price_value: 500 })).json()) as {
    id: string
  }
  const policy = { slug: 'tier', name: 'Tier', access }
  const tier = (await (await send(`/v1/admin/products/${product.id}/policies`, policy)).json()) as { id: string }
  return { product, tier }
}

describe('the buyer’s gateway key', () => {
  it('is issued with an admin’s license on a tier with access, bound to it and held to its models', async () => {
    const { product, tier } = await accessTier('gpu', {
      models: [MODEL],
      requests_per_minute: 100,
      concurrent_streams: 3,
    })
    const res = await send('/v1/admin/licenses', { product_id: product.id, policy_id: tier.id })
    expect(res.status).toBe(200)
    const issued = (await res.json()) as { license: { id: string }; gateway_key: string | null }
    expect(issued.gateway_key).toMatch(/^tdm_[a-f0-9]{8}_[A-Za-z0-9_-]{43}$/)
    const secret = issued.gateway_key!

    const keys = (await (await rig.daemon.admin('/api/consumer-keys')).json()) as {
      keys: { license_id: string | null; max_concurrent: number | null }[]
    }
    expect(JSON.stringify(keys)).not.toContain(secret.slice(14))
    expect(keys.keys.find((k) => k.license_id === issued.license.id)).toMatchObject({ max_concurrent: 3 })

    expect((await chat(secret, MODEL)).status).toBe(200)
    const other = await chat(secret, 'some/other-model')
    expect(other.status).toBe(403)
  })

  it('stops at the next request once its license is suspended or revoked, and works again on reinstate', async () => {
    const { product, tier } = await accessTier('gpu2', {})
    const issued = (await (
      await send('/v1/admin/licenses', { product_id: product.id, policy_id: tier.id })
    ).json()) as {
      license: { id: string }
      gateway_key: string
    }
    const id = issued.license.id
    expect((await chat(issued.gateway_key, MODEL)).status).toBe(200)

    expect((await send(`/v1/admin/licenses/${id}/suspend`, { reason: 'unpaid' })).status).toBe(200)
    const suspended = await chat(issued.gateway_key, MODEL)
    expect(suspended.status).toBe(403)
    expect(JSON.stringify(await suspended.json())).toContain('its license is suspended')

    expect((await send(`/v1/admin/licenses/${id}/reinstate`, {})).status).toBe(200)
    expect((await chat(issued.gateway_key, MODEL)).status).toBe(200)

    expect((await send(`/v1/admin/licenses/${id}/revoke`, { reason: 'abuse' })).status).toBe(200)
    const revoked = await chat(issued.gateway_key, MODEL)
    expect(revoked.status).toBe(403)
    expect(JSON.stringify(await revoked.json())).toContain('its license is revoked')
  })

  it('is not issued for a tier without access', async () => {
    const product = (await (
      await send('/v1/admin/products', { slug: 'plain', name: 'Plain', price_value: 500 })
    ).json()) as {
      id: string
    }
    const issued = (await (await send('/v1/admin/licenses', { product_id: product.id })).json()) as {
      gateway_key: string | null
    }
    expect(issued.gateway_key).toBeNull()
  })
})
