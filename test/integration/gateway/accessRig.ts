import { expect } from 'vitest'
import type { GatewayRig } from './setup'

/** Selling access over a gateway rig (issue 45): the admin calls and chats the tests share. */
export const ACCESS_MODEL = 'sim/Qwen3-8B-Instruct'

/** A JSON POST with the admin token. */
export function adminPost(rig: GatewayRig, p: string, body: unknown): Promise<Response> {
  return rig.daemon.admin(p, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
}

/** A product with one tier selling `access` through the admin API. */
export async function accessTier(
  rig: GatewayRig,
  slug: string,
  access: object,
): Promise<{ productId: string; tierId: string }> {
  const p = (await (await adminPost(rig, '/v1/admin/products', { slug, name: slug, price_value: 500 })).json()) as {
    id: string
  }
  const tier = (await (
    await adminPost(rig, `/v1/admin/products/${p.id}/policies`, { slug: 'api', name: 'API', access })
  ).json()) as { id: string }
  return { productId: p.id, tierId: tier.id }
}

/** A license the admin issues on `tier`: its id, license key and the buyer's gateway key. */
export async function issueAccess(
  rig: GatewayRig,
  tier: { productId: string; tierId: string },
  buyerEmail?: string,
): Promise<{ id: string; licenseKey: string; secret: string }> {
  const res = await adminPost(rig, '/v1/admin/licenses', {
    product_id: tier.productId,
    policy_id: tier.tierId,
    ...(buyerEmail ? { buyer_email: buyerEmail } : {}),
  })
  expect(res.status).toBe(200)
  const issued = (await res.json()) as { license: { id: string }; license_key: string; gateway_key: string }
  return { id: issued.license.id, licenseKey: issued.license_key, secret: issued.gateway_key }
}

/** One chat completion as `secret` (none: keyless). */
export function chatAs(rig: GatewayRig, secret?: string, stream = false): Promise<Response> {
  return fetch(`${rig.daemon.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(secret ? { authorization: `Bearer ${secret}` } : {}) },
    body: JSON.stringify({ model: ACCESS_MODEL, stream, messages: [{ role: 'user', content: 'hello there' }] }),
  })
}

/** The buyer's `/recover` page for a license key, as HTML. */
export async function recoverPage(rig: GatewayRig, licenseKey: string): Promise<string> {
  const res = await fetch(`${rig.daemon.url}/recover`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ key: licenseKey }).toString(),
  })
  return res.text()
}
