import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startRig, type GatewayRig } from './setup'

/**
 * Selling access must not lock the operator's own LAN apps out (issue 45): a buyer's key does not
 * make keyless LAN clients need one (only a key the operator makes does), and a buyer's key that
 * comes from the LAN is still held to its license and counted.
 */
const MODEL = 'sim/Qwen3-8B-Instruct'
let rig: GatewayRig

beforeAll(async () => {
  rig = await startRig({})
})
afterAll(() => rig.stop())

const send = async (p: string, body: unknown): Promise<Response> =>
  rig.daemon.admin(p, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

const chat = (secret?: string): Promise<Response> =>
  fetch(`${rig.daemon.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(secret ? { authorization: `Bearer ${secret}` } : {}) },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hello there' }] }),
  })

describe('a LAN with sold keys', () => {
  it('keeps serving keyless LAN clients, and holds a buyer’s key that comes anyway to its license', async () => {
    const product = (await (await send('/v1/admin/products', { slug: 'lan', name: 'LAN', price_value: 5 })).json()) as {
      id: string
    }
    const tier = (await (
      await send(`/v1/admin/products/${product.id}/policies`, {
        slug: 'api',
        name: 'API',
        access: { tokens_per_period: 5 },
      })
    ).json()) as { id: string }
    const issued = (await (
      await send('/v1/admin/licenses', { product_id: product.id, policy_id: tier.id })
    ).json()) as {
      license: { id: string }
      gateway_key: string
    }

    const open = await chat()
    expect(open.status).toBe(200)
    await open.arrayBuffer()

    const first = await chat(issued.gateway_key)
    expect(first.status).toBe(200)
    await first.arrayBuffer()
    await new Promise((r) => setTimeout(r, 50))
    // Its license's 5 tokens are spent by the first answer: its next request is refused, from the LAN too.
    expect((await chat(issued.gateway_key)).status).toBe(429)
    expect((await send(`/v1/admin/licenses/${issued.license.id}/suspend`, { reason: 'test' })).status).toBe(200)
    expect((await chat(issued.gateway_key)).status).toBe(403)
    expect((await chat()).status).toBe(200)

    // A key the operator makes closes the LAN to keyless clients, as before.
    expect((await send('/api/consumer-keys', { name: 'office' })).status).toBe(200)
    expect((await chat()).status).toBe(401)
  })
})
