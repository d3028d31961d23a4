import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, expect } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { startLicensingSim, type LicensingSim } from '../../fakes/licensingDemo'
import { startRig, type GatewayRig } from './setup'

/** Selling access over a gateway rig (issue 45): the admin calls and chats the tests share. */
export const ACCESS_MODEL = 'sim/Qwen3-8B-Instruct'

/** A gateway rig on a manual clock and its own data directory, which `stop` removes. */
export interface AccessRig extends GatewayRig {
  readonly clock: ManualClock
  /** The daemon stopped and started again on the same clock and data. */
  restart(): Promise<AccessRig>
}

/** The rig the selling-access tests run on: its clock starts at 2026-01-10T12:00Z. */
export function startAccessRig(dirPrefix: string): Promise<AccessRig> {
  const clock = new ManualClock(Date.UTC(2026, 0, 10, 12))
  return accessRigOn(clock, fs.mkdtempSync(path.join(os.tmpdir(), dirPrefix)))
}

async function accessRigOn(clock: ManualClock, dataDir: string): Promise<AccessRig> {
  const rig = await startRig({}, { clock, dataDir })
  return {
    ...rig,
    clock,
    async restart() {
      await rig.stop()
      return accessRigOn(clock, dataDir)
    },
    async stop() {
      await rig.stop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

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

/**
 * The demo's shop (loopback BTCPay and rates, seeded) over a gateway rig, for the file's tests:
 * started before them and stopped after; its fields are set once the tests run.
 */
export function demoShopRig(): { shop: LicensingSim; rig: GatewayRig } {
  const ctx = {} as { shop: LicensingSim; rig: GatewayRig }
  beforeAll(async () => {
    ctx.shop = await startLicensingSim()
    ctx.rig = await startRig({ ...ctx.shop.env, LICENSING_RATE_LIMIT: '0' })
    await ctx.shop.seed(ctx.rig.daemon.url, ctx.rig.daemon.adminToken)
  })
  afterAll(async () => {
    await ctx.rig?.stop()
    await ctx.shop?.close()
  })
  return ctx
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
