import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startRig, waitFor, type GatewayRig } from './setup'

/**
 * Issue 45, "safe on the internet": while any tier sells access, a consumer request without a key
 * is refused unless it comes from the local network. The daemon trusts 127.0.0.1 as its reverse
 * proxy, so each request names its client in X-Forwarded-For: 203.0.113.7 (a documentation
 * address, never contacted) is outside, 192.168.1.20 and 100.64.3.4 are on the LAN.
 */
const MODEL = 'sim/Qwen3-8B-Instruct'
const OUTSIDE = '203.0.113.7'
const SELLS = 'this gateway sells access; requests from outside the local network need a key'
let rig: GatewayRig

beforeAll(async () => {
  rig = await startRig({ TRUSTED_PROXIES: '127.0.0.1' })
})
afterAll(() => rig.stop())

const admin = async (path: string, body: unknown, method = 'POST'): Promise<Response> =>
  rig.daemon.admin(path, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

function from(client: string | null, path: string, init: { body?: unknown; bearer?: string } = {}): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (client !== null) headers['x-forwarded-for'] = client
  if (init.bearer !== undefined) headers.authorization = `Bearer ${init.bearer}`
  return fetch(`${rig.daemon.url}${path}`, {
    method: init.body === undefined ? 'GET' : 'POST',
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  })
}

const chatBody = { model: MODEL, messages: [{ role: 'user', content: 'hello' }] }
const chat = (client: string | null, bearer?: string) =>
  from(client, '/v1/chat/completions', { body: chatBody, bearer })

let tierId = ''
let productId = ''

describe('exposing the consumer endpoints while a tier sells access', () => {
  it('leaves the gateway open to everyone while no tier sells access', async () => {
    expect((await chat(OUTSIDE)).status).toBe(200)
    const product = (await (
      await admin('/v1/admin/products', { slug: 'gpu', name: 'GPU', price_value: 500 })
    ).json()) as {
      id: string
    }
    productId = product.id
    // A tier without access changes nothing.
    expect((await admin(`/v1/admin/products/${productId}/policies`, { slug: 'plain', name: 'Plain' })).status).toBe(200)
    expect((await chat(OUTSIDE)).status).toBe(200)
  })

  it('refuses a keyless request from outside with 401 in OpenAI’s shape once a tier sells access', async () => {
    const res = await admin(`/v1/admin/products/${productId}/policies`, {
      slug: 'access',
      name: 'Access',
      access: { concurrent_streams: 1 },
    })
    expect(res.status).toBe(200)
    tierId = ((await res.json()) as { id: string }).id

    const refused = await chat(OUTSIDE)
    expect(refused.status).toBe(401)
    const body = (await refused.json()) as { error: { message: string; type: string; code: string } }
    expect(body.error.message).toContain(SELLS)
    expect(body.error.type).toBeTypeOf('string')
    expect((await from(OUTSIDE, '/v1/models')).status).toBe(401)
    for (const path of ['/v1/completions', '/v1/embeddings', '/v1/audio/speech', '/v1/audio/transcriptions'])
      expect((await from(OUTSIDE, path, { body: { model: MODEL, input: 'x', prompt: 'x' } })).status, path).toBe(401)
    // Through the proxy in IPv6 and IPv4-mapped spellings of public addresses too.
    expect((await chat('2001:db8::7')).status).toBe(401)
    expect((await chat('::ffff:203.0.113.7')).status).toBe(401)
  })

  it('still serves the LAN without a key: private, CGNAT, loopback and the proxy host itself', async () => {
    for (const client of ['192.168.1.20', '10.1.2.3', '100.64.3.4', 'fd00::5', '127.0.0.1', null])
      expect((await chat(client)).status, String(client)).toBe(200)
  })

  it('admits the operator’s admin token from outside', async () => {
    expect((await chat(OUTSIDE, rig.daemon.adminToken)).status).toBe(200)
  })

  it('keeps refusing while the tier is archived, and opens again once no tier sells access', async () => {
    expect((await admin(`/v1/admin/policies/${tierId}`, { active: false }, 'PATCH')).status).toBe(200)
    expect((await chat(OUTSIDE)).status).toBe(401)
    expect((await admin(`/v1/admin/policies/${tierId}`, { access: null, active: true }, 'PATCH')).status).toBe(200)
    expect((await chat(OUTSIDE)).status).toBe(200)
    expect((await admin(`/v1/admin/policies/${tierId}`, { access: { concurrent_streams: 1 } }, 'PATCH')).status).toBe(
      200,
    )
    expect((await chat(OUTSIDE)).status).toBe(401)
  })

  it('serves the buyer’s key from outside, held to the tier’s concurrent streams', async () => {
    const issued = await admin('/v1/admin/licenses', { product_id: productId, policy_id: tierId })
    expect(issued.status).toBe(200)
    const key = ((await issued.json()) as { gateway_key: string }).gateway_key
    expect((await chat(OUTSIDE, key)).status).toBe(200)
    expect((await chat(OUTSIDE, 'tdm_00000000_wrongwrongwrongwrongwrongwrongwrongwrongwro')).status).toBe(401)

    // One stream at a time: a second request while the first is held upstream is 429.
    await rig.llm.setFault('hang')
    const held = new AbortController()
    const first = fetch(`${rig.daemon.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-forwarded-for': OUTSIDE },
      body: JSON.stringify(chatBody),
      signal: held.signal,
    }).catch(() => null)
    await waitFor(() => rig.llm.openRequests === 1)
    const second = await chat(OUTSIDE, key)
    expect(second.status).toBe(429)
    expect(((await second.json()) as { error: { message: string } }).error.message).toContain('1 requests running')
    held.abort()
    await first
    await rig.llm.setFault('none')
  })
})

describe('while licensing is off', () => {
  it('takes the shop to sell access: the outside needs a key, the LAN does not', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-sells-off-'))
    // Not a database at all: licensing goes degraded at start and cannot say whether a tier sells access.
    fs.writeFileSync(path.join(dataDir, 'licensing.sqlite'), Buffer.alloc(8192, 0x5a))
    const off = await startRig({ TRUSTED_PROXIES: '127.0.0.1' }, { dataDir })
    try {
      const health = (await (await fetch(`${off.daemon.url}/api/health`)).json()) as {
        components: { licensing: { state: string } }
      }
      expect(health.components.licensing.state).toBe('degraded')
      const ask = (client: string) =>
        fetch(`${off.daemon.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': client },
          body: JSON.stringify(chatBody),
        })
      const refused = await ask(OUTSIDE)
      expect(refused.status).toBe(401)
      expect(((await refused.json()) as { error: { message: string } }).error.message).toContain(SELLS)
      expect((await ask('192.168.1.20')).status).toBe(200)
    } finally {
      await off.stop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
