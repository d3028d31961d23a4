/**
 * The Keysat TypeScript SDK (`@keysat/licensing-client`) is not published on the npm registry, so
 * this file re-states its documented field contract and runs it against Tandem. It mirrors SDK
 * version 0.1.0 (`src/online.ts` and `src/verify.ts` of the keysat-client-ts repository): the
 * request bodies each call sends, the snake_case fields each answer is read from and the types the
 * SDK's interfaces declare for them, and the offline Verifier (Ed25519 over the LIC1 payload).
 * Strings must be strings and numbers numbers: the SDK's casts would hide a wrong type at run time,
 * but its typed callers (and the Rust SDK, which declares the same shapes) break on one.
 */
import crypto from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fiatToSats, toCentibps } from '../../../src-main/licensing/rates'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { FakeBtcpay } from '../../fakes/btcpay'
import { FakeRateSources } from '../../fakes/rates'

type Raw = Record<string, unknown>

function str(raw: Raw, field: string): string {
  const v = raw[field]
  if (typeof v !== 'string') throw new Error(`${field}: expected a string, got ${JSON.stringify(v)}`)
  return v
}
function num(raw: Raw, field: string): number {
  const v = raw[field]
  if (typeof v !== 'number' || !Number.isFinite(v))
    throw new Error(`${field}: expected a number, got ${JSON.stringify(v)}`)
  return v
}
function optStr(raw: Raw, field: string): string | undefined {
  const v = raw[field]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'string') throw new Error(`${field}: expected a string or nothing, got ${JSON.stringify(v)}`)
  return v
}
function optNum(raw: Raw, field: string): number | undefined {
  const v = raw[field]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'number') throw new Error(`${field}: expected a number or nothing, got ${JSON.stringify(v)}`)
  return v
}

/** The SDK 0.1.0 `Client`, as its documentation describes each call. */
class SdkContractClient {
  constructor(private readonly base: string) {}

  private async call(path: string, body?: unknown): Promise<Raw> {
    const res = await fetch(`${this.base}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    if (!res.ok) throw new Error(`HTTP ${res.status}: ${text}`)
    return JSON.parse(text) as Raw
  }

  async fetchPubkeyPem(): Promise<string> {
    return str(await this.call('/v1/pubkey'), 'public_key_pem')
  }

  /** `priceSats`: smallest unit of the listed currency; `basePriceSats`: sats. */
  async listPublicPolicies(slug: string) {
    const raw = await this.call(`/v1/products/${encodeURIComponent(slug)}/policies`)
    const product = raw.product as Raw
    return {
      product: {
        slug: str(product, 'slug'),
        name: str(product, 'name'),
        basePriceSats: num(product, 'base_price_sats'),
      },
      policies: (raw.policies as Raw[]).map((p) => ({
        slug: str(p, 'slug'),
        name: str(p, 'name'),
        priceSats: num(p, 'price_sats'),
        durationSeconds: num(p, 'duration_seconds'),
        maxMachines: num(p, 'max_machines'),
        isTrial: p.is_trial === true,
        isRecurring: p.is_recurring === true,
        renewalPeriodDays: num(p, 'renewal_period_days'),
        trialDays: num(p, 'trial_days'),
      })),
    }
  }

  async startPurchase(
    slug: string,
    o: { buyerEmail?: string; code?: string; policySlug?: string; redirectUrl?: string; buyerNote?: string } = {},
  ) {
    const raw = await this.call('/v1/purchase', {
      product: slug,
      buyer_email: o.buyerEmail,
      buyer_note: o.buyerNote,
      redirect_url: o.redirectUrl,
      code: o.code,
      policy_slug: o.policySlug,
    })
    return {
      invoiceId: str(raw, 'invoice_id'),
      btcpayInvoiceId: str(raw, 'btcpay_invoice_id'),
      checkoutUrl: str(raw, 'checkout_url'),
      amountSats: num(raw, 'amount_sats'),
      pollUrl: str(raw, 'poll_url'),
    }
  }

  async pollPurchase(invoiceId: string) {
    const raw = await this.call(`/v1/purchase/${encodeURIComponent(invoiceId)}`)
    return {
      invoiceId: str(raw, 'invoice_id'),
      status: str(raw, 'status'),
      productId: str(raw, 'product_id'),
      amountSats: num(raw, 'amount_sats'),
      licenseKey: optStr(raw, 'license_key'),
      licenseId: optStr(raw, 'license_id'),
    }
  }

  async redeemFreeLicense(slug: string, code: string, o: { buyerEmail?: string } = {}) {
    const raw = await this.call('/v1/redeem', { product: slug, code, buyer_email: o.buyerEmail })
    return {
      licenseId: str(raw, 'license_id'),
      licenseKey: str(raw, 'license_key'),
      invoiceId: str(raw, 'invoice_id'),
      redemptionId: str(raw, 'redemption_id'),
    }
  }

  async validate(key: string, o: { productSlug?: string; fingerprint?: string; hostname?: string } = {}) {
    const raw = await this.call('/v1/validate', {
      key,
      product_slug: o.productSlug,
      fingerprint: o.fingerprint,
      hostname: o.hostname,
      platform: undefined,
    })
    return {
      ok: raw.ok === true,
      reason: optStr(raw, 'reason'),
      licenseId: optStr(raw, 'license_id'),
      productSlug: optStr(raw, 'product_slug'),
      machineId: optStr(raw, 'machine_id'),
      maxMachines: optNum(raw, 'max_machines'),
    }
  }

  private machine(raw: Raw) {
    return {
      ok: raw.ok === true,
      reason: optStr(raw, 'reason'),
      machineId: optStr(raw, 'machine_id'),
      activeCount: optNum(raw, 'active_count'),
      maxMachines: optNum(raw, 'max_machines'),
    }
  }

  async activate(key: string, fingerprint: string, o: { hostname?: string; platform?: string } = {}) {
    return this.machine(await this.call('/v1/machines/activate', { key, fingerprint, ...o }))
  }

  async heartbeat(key: string, fingerprint: string) {
    return this.machine(await this.call('/v1/machines/heartbeat', { key, fingerprint }))
  }

  async deactivate(key: string, fingerprint: string, reason?: string) {
    return this.machine(await this.call('/v1/machines/deactivate', { key, fingerprint, reason }))
  }
}

const B32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'
function base32Decode(text: string): Buffer {
  const out: number[] = []
  let acc = 0
  let bits = 0
  for (const ch of text) {
    const v = B32.indexOf(ch)
    if (v < 0) throw new Error('bad_format')
    acc = ((acc << 5) | v) & 0xffff
    bits += 5
    if (bits >= 8) {
      bits -= 8
      out.push((acc >> bits) & 0xff)
    }
  }
  return Buffer.from(out)
}
const uuidOf = (b: Buffer): string => {
  const h = b.toString('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

/** The SDK's offline `Verifier`: `LIC1-<payload>-<signature>`, Ed25519 over the payload bytes. */
class SdkContractVerifier {
  private readonly key: crypto.KeyObject
  constructor(pem: string) {
    this.key = crypto.createPublicKey(pem)
  }

  verify(keyText: string): { licenseId: string; productId: string; expiresAt: number } {
    const [prefix, payloadText, sigText, ...rest] = keyText.trim().split('-')
    if (prefix !== 'LIC1' || !payloadText || !sigText || rest.length > 0) throw new Error('bad_format')
    const payload = base32Decode(payloadText)
    const signature = base32Decode(sigText)
    if (signature.length !== 64 || !crypto.verify(null, payload, this.key, signature)) throw new Error('bad_signature')
    const version = payload[0]
    return {
      productId: uuidOf(payload.subarray(2, 18)),
      licenseId: uuidOf(payload.subarray(18, 34)),
      expiresAt: version === 2 ? Number(payload.readBigInt64BE(42)) : 0,
    }
  }

  verifyWithTime(keyText: string, nowUnixSeconds: number) {
    const r = this.verify(keyText)
    if (r.expiresAt !== 0 && nowUnixSeconds >= r.expiresAt) throw new Error('expired')
    return r
  }
}

let d: TestDaemon
let btcpay: FakeBtcpay
let rates: FakeRateSources
let sdk: SdkContractClient

beforeAll(async () => {
  btcpay = await new FakeBtcpay().start()
  rates = await new FakeRateSources().start()
  d = await startDaemon({ env: { ...rates.env, LICENSING_RATE_LIMIT: '0' } })
  btcpay.webhookUrl = `${d.url}/v1/btcpay/webhook`
  const admin = async (path: string, body: unknown) => {
    const res = await d.admin(path, { method: 'POST', body: JSON.stringify(body) })
    expect(res.status, path).toBe(200)
    return (await res.json()) as Raw
  }
  await admin('/v1/admin/btcpay/connect', {
    base_url: btcpay.url,
    store_id: btcpay.storeId,
    api_key: btcpay.apiKey,
    webhook_secret: btcpay.webhookSecret,
  })
  const p = await admin('/v1/admin/products', {
    slug: 'sdkapp',
    name: 'SDK App',
    price_currency: 'USD',
    price_value: 2500,
  })
  await admin(`/v1/admin/products/${String(p.id)}/policies`, {
    slug: 'lite',
    name: 'Lite',
    price_currency_override: 'SAT',
    price_value_override: 20_000,
    max_machines: 2,
  })
  await admin('/v1/admin/discount-codes', { code: 'SDKFREE', kind: 'free_license', product_id: p.id })
  await admin('/v1/admin/discount-codes', { code: 'SDK100', kind: 'percent', value: 100, product_id: p.id })
  sdk = new SdkContractClient(d.url)
})

afterAll(async () => {
  await d?.stop()
  await Promise.all([btcpay?.stop(), rates?.stop()])
})

describe('Keysat TS SDK 0.1.0 field contract', () => {
  it('listPublicPolicies: priceSats in the listed unit, basePriceSats in sats, ascending price', async () => {
    const r = await sdk.listPublicPolicies('sdkapp')
    const rate = toCentibps(rates.kraken.rates.USD.toFixed(5))
    expect(r.product.basePriceSats).toBe(fiatToSats(2500, rate))
    // 20,000 sats is less than $25.00 at the fake rate (~25,700 sats): Lite lists first.
    expect(fiatToSats(2500, rate)).toBeGreaterThan(20_000)
    expect(r.policies.map((p) => [p.slug, p.priceSats])).toEqual([
      ['lite', 20_000],
      ['default', 2500],
    ])
  })

  it('startPurchase → pay → pollPurchase yields a key the offline Verifier accepts', async () => {
    const s = await sdk.startPurchase('sdkapp', { policySlug: 'lite', buyerEmail: 'sdk@example.com' })
    expect(s.amountSats).toBe(20_000)
    expect(s.btcpayInvoiceId.length).toBeGreaterThan(0)
    expect(s.pollUrl.endsWith(`/v1/purchase/${s.invoiceId}`)).toBe(true)
    expect((await sdk.pollPurchase(s.invoiceId)).status).toBe('pending')
    expect((await btcpay.pay(s.btcpayInvoiceId)).status).toBe(200)
    const polled = await sdk.pollPurchase(s.invoiceId)
    expect(polled.status).toBe('settled')
    const key = polled.licenseKey!
    const verifier = new SdkContractVerifier(await sdk.fetchPubkeyPem())
    const v = verifier.verifyWithTime(key, Math.floor(Date.now() / 1000))
    expect(v.licenseId).toBe(polled.licenseId)
    expect(v.productId).toBe(polled.productId)
    // One character changed in the middle of the signature.
    const sigStart = key.lastIndexOf('-') + 10
    const tampered = key.slice(0, sigStart) + (key[sigStart] === 'A' ? 'B' : 'A') + key.slice(sigStart + 1)
    expect(() => verifier.verify(tampered)).toThrow(/bad_signature/)

    const fp = 'sdk-machine-1'
    expect(await sdk.activate(key, fp, { hostname: 'box' })).toMatchObject({ ok: true, activeCount: 1, maxMachines: 2 })
    expect(await sdk.validate(key, { productSlug: 'sdkapp', fingerprint: fp })).toMatchObject({
      ok: true,
      productSlug: 'sdkapp',
      licenseId: polled.licenseId,
    })
    expect(await sdk.heartbeat(key, fp)).toMatchObject({ ok: true })
    expect(await sdk.deactivate(key, fp, 'sdk test')).toMatchObject({ ok: true, activeCount: 0 })
    expect(await sdk.heartbeat(key, fp)).toMatchObject({ ok: false, reason: 'not_activated' })
  })

  it('a zero-total startPurchase still answers a string btcpay_invoice_id', async () => {
    const s = await sdk.startPurchase('sdkapp', { code: 'SDK100' })
    expect(s.amountSats).toBe(0)
    expect(s.btcpayInvoiceId).toBe(`free-${s.invoiceId}`)
    const polled = await sdk.pollPurchase(s.invoiceId)
    expect(polled.status).toBe('settled')
    expect(polled.licenseKey).toMatch(/^LIC1-/)
  })

  it('redeemFreeLicense answers a signed key', async () => {
    const r = await sdk.redeemFreeLicense('sdkapp', 'SDKFREE', { buyerEmail: 'gift@example.com' })
    const verifier = new SdkContractVerifier(await sdk.fetchPubkeyPem())
    expect(verifier.verify(r.licenseKey).licenseId).toBe(r.licenseId)
    expect((await sdk.validate(r.licenseKey, { productSlug: 'sdkapp' })).ok).toBe(true)
  })
})
