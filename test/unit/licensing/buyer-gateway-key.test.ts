import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { DiscountInput, PolicyPatch, TierTargetInput } from '../../../src-main/contract/licensing'
import { ConsumerKeys } from '../../../src-main/gateway/keys/consumerKeyStore'
import { licenseAccessKeys } from '../../../src-main/gateway/keys/licenseAccessKeys'
import { adminHandlers } from '../../../src-main/licensing/adminApi'
import { buyerHandlers } from '../../../src-main/licensing/buyerApi'
import { licenseStanding } from '../../../src-main/licensing/licenseStanding'
import { thankYouPage, thankYouState } from '../../../src-main/licensing/pages/thankYou'
import { ManualClock } from '../../../src-main/lib/clock'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import type { AccessKeys } from '../../../src-main/platform/accessKeys'
import { FakeBtcpay } from '../../fakes/btcpay'
import { connectShop, paymentsHarness, satProduct, tierOn, type Harness } from './payments-harness'

/** The buyer's gateway key (issue 45): issued by a sale, shown once, recovered, following its tier. */
const ACCESS = {
  models: ['llm'],
  tokens_per_period: null,
  requests_per_minute: 30,
  concurrent_streams: 2,
  top_up: null,
}
let h: Harness
let btcpay: FakeBtcpay
let keys: ConsumerKeys
let gatewayDir: string
let productId: string
/** Set: the gateway refuses to issue (a read-only gateway.db). */
let failIssue = false

beforeEach(async () => {
  btcpay = await new FakeBtcpay().start()
  gatewayDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-gw-'))
  keys = ConsumerKeys.open(gatewayDir, new ManualClock(), createLogger({ sink: new MemorySink() }))
  const real = licenseAccessKeys(keys)
  const accessKeys: AccessKeys = {
    ...real,
    issue: (...a) => {
      if (failIssue) throw new Error('gateway.db is read-only')
      return real.issue(...a)
    },
  }
  h = paymentsHarness({ accessKeys })
  productId = satProduct(h).productId
  tierOn(h, productId, { slug: 'gpu', rank: 1, price: 1000 }, { access: ACCESS })
  tierOn(h, productId, { slug: 'gpu-pro', rank: 2, price: 3000 }, { access: { ...ACCESS, requests_per_minute: 90 } })
  tierOn(h, productId, { slug: 'plain', rank: 3, price: 5000 })
  await connectShop(h, btcpay)
  failIssue = false
})

afterEach(async () => {
  keys.close()
  await h.close()
  await btcpay.stop()
  fs.rmSync(gatewayDir, { recursive: true, force: true })
})

/** A paid purchase of `slug`, settled as the provider's webhook would. */
async function buy(slug: string): Promise<{ invoiceId: string; licenseId: string; licenseKey: string }> {
  const s = await h.payments.purchases.start({ product: 'app', policy: slug })
  expect(s.amount_sats).toBeGreaterThan(0)
  expect(h.payments.settlement.settle(s.invoice_id, { actor: 'provider', via: 'test' }).kind).toBe('issued')
  const p = h.payments.purchases.poll(s.invoice_id)
  return { invoiceId: s.invoice_id, licenseId: p.license_id!, licenseKey: p.license_key! }
}

const SECRET = /tdm_[a-f0-9]{8}_[A-Za-z0-9_-]{43}/
const everythingStored = (): string =>
  JSON.stringify([
    h.services.db.prepare('SELECT * FROM audit_log').all(),
    h.services.db.prepare('SELECT * FROM webhook_deliveries').all(),
    h.logs.lines,
  ])

describe('a purchase issues the buyer’s gateway key', () => {
  it('a paid settlement issues the key after the commit, bound to the license with the tier’s limits', async () => {
    const { licenseId } = await buy('gpu')
    expect(keys.forLicense(licenseId)).toMatchObject({
      license_id: licenseId,
      requests_per_minute: 30,
      max_concurrent: 2,
    })
    expect(h.services.db.prepare('SELECT count(*) FROM webhook_deliveries').pluck().get()).toBeGreaterThan(0)
    expect(everythingStored()).not.toMatch(SECRET)
  })

  it('a subscription’s first license gets the key too', async () => {
    tierOn(
      h,
      productId,
      { slug: 'monthly', rank: 4, price: 700 },
      { access: ACCESS, is_recurring: true, renewal_period_days: 30 },
    )
    const { licenseId } = await buy('monthly')
    expect(
      h.services.db.prepare('SELECT count(*) FROM subscriptions WHERE license_id = ?').pluck().get(licenseId),
    ).toBe(1)
    expect(keys.forLicense(licenseId)?.license_id).toBe(licenseId)
  })

  it('a free redemption answers with the key beside the license key', () => {
    h.services.discounts.create(DiscountInput.parse({ code: 'FREE-GPU', kind: 'free_license' }))
    const out = h.services.licenses.redemption.redeem({ product: 'app', code: 'FREE-GPU', policy: 'gpu' })
    expect(out.gateway_key).toMatch(SECRET)
    expect(keys.identify(out.gateway_key!)?.id).toBe(keys.forLicense(out.license_id)?.id)
    expect(everythingStored()).not.toContain(out.gateway_key!)
  })

  it('a settle rolled back leaves no key; a key the gateway refuses leaves the paid license standing, audited', async () => {
    const s = await h.payments.purchases.start({ product: 'app', policy: 'gpu' })
    const issuing = h.services.licenses.issuing
    const original = issuing.issue.bind(issuing)
    issuing.issue = (a) => {
      original(a)
      throw new Error('power cut')
    }
    expect(() => h.payments.settlement.settle(s.invoice_id, { actor: 'provider', via: 'test' })).toThrow('power cut')
    issuing.issue = original
    expect(keys.list()).toHaveLength(0)

    failIssue = true
    expect(h.payments.settlement.settle(s.invoice_id, { actor: 'provider', via: 'retry' }).kind).toBe('issued')
    const licenseId = h.payments.purchases.poll(s.invoice_id).license_id!
    expect(h.services.licenses.lookup.row(licenseId)?.status).toBe('active')
    expect(keys.forLicense(licenseId)).toBeNull()
    const failed = h.services.db
      .prepare("SELECT details FROM audit_log WHERE action = 'license.gateway_key_failed' AND target_id = ?")
      .pluck()
      .get(licenseId) as string
    expect(failed).toContain('read-only')
  })
})

describe('the thank-you page shows the key once', () => {
  it('shows a working secret on the first view, then says it was shown; the purchase’s first secret is void', async () => {
    const { invoiceId, licenseId } = await buy('gpu')
    const page = () => {
      const status = h.payments.purchases.poll(invoiceId)
      const model = { ...status, product_name: 'App', buyer_email: null, buyer_note: null, kind: 'purchase' }
      expect(thankYouState(model)).toBe('issued')
      return thankYouPage(model, null, h.services.licenses.access.revealOnce(licenseId))
    }
    const first = page()
    const secret = first.match(SECRET)?.[0]
    expect(secret).toBeDefined()
    expect(first).toContain('shown this once')
    expect(keys.identify(secret!)?.id).toBe(keys.forLicense(licenseId)?.id)

    const again = page()
    expect(again).not.toMatch(SECRET)
    expect(again).toContain('is not shown again')
    expect(again).toContain('/v1/gateway-key')
    expect(JSON.stringify(h.payments.purchases.poll(invoiceId))).not.toMatch(SECRET)
    expect(everythingStored()).not.toContain(secret!)
  })

  it('issues the key on the first view when the sale could not, and a tier without access shows nothing', async () => {
    failIssue = true
    const { licenseId } = await buy('gpu')
    expect(keys.forLicense(licenseId)).toBeNull()
    failIssue = false
    const shown = h.services.licenses.access.revealOnce(licenseId)
    expect(shown?.kind).toBe('secret')
    expect(keys.forLicense(licenseId)).not.toBeNull()

    const plain = await buy('plain')
    expect(h.services.licenses.access.revealOnce(plain.licenseId)).toBeNull()
  })

  it('a view that cannot make the key tries again on the next one', async () => {
    failIssue = true
    const { licenseId } = await buy('gpu')
    expect(h.services.licenses.access.revealOnce(licenseId)).toEqual({ kind: 'unavailable' })
    failIssue = false
    expect(h.services.licenses.access.revealOnce(licenseId)?.kind).toBe('secret')
    expect(h.services.licenses.access.revealOnce(licenseId)?.kind).toBe('shown')
  })
})

describe('POST /v1/gateway-key', () => {
  const recover = (licenseKey: string) =>
    buyerHandlers(h.services).licGatewayKey(
      { license_key: licenseKey },
      {} as Parameters<ReturnType<typeof buyerHandlers>['licGatewayKey']>[1],
    )

  it('rotates the key with the license key: the new secret works, the old one is refused', async () => {
    const { licenseId, licenseKey } = await buy('gpu')
    const first = await recover(licenseKey)
    expect(first).toMatchObject({ ok: true, license_id: licenseId, requests_per_minute: 30, models: ['llm'] })
    const second = await recover(licenseKey)
    expect(second.gateway_key).not.toBe(first.gateway_key)
    expect(keys.identify(first.gateway_key)).toBeNull()
    expect(keys.identify(second.gateway_key)?.id).toBe(keys.forLicense(licenseId)?.id)
    expect(keys.list()).toHaveLength(1)
    expect(everythingStored()).not.toContain(second.gateway_key)
  })

  it('issues a key to a license that has none, and refuses a bad key, a suspended license and a tier without access', async () => {
    failIssue = true
    const { licenseId, licenseKey } = await buy('gpu')
    failIssue = false
    expect(keys.forLicense(licenseId)).toBeNull()
    expect((await recover(licenseKey)).gateway_key).toMatch(SECRET)
    expect(keys.forLicense(licenseId)).not.toBeNull()

    await expect(recover('LIC1-nonsense')).rejects.toMatchObject({ status: 401 })
    const plain = await buy('plain')
    await expect(recover(plain.licenseKey)).rejects.toMatchObject({
      status: 403,
      message: expect.stringContaining('does not include API access'),
    })
    h.services.licenses.status.suspend(licenseId, 'unpaid')
    await expect(recover(licenseKey)).rejects.toMatchObject({ status: 401 })
  })
})

describe('a tier’s changed access reaches existing keys', () => {
  const admin = () => adminHandlers(h.services)
  const ctx = {} as Parameters<ReturnType<typeof adminHandlers>['licAdminUpdatePolicy']>[1]
  const policyId = (slug: string) => h.services.catalog.policyRows(productId).find((p) => p.slug === slug)!.id

  it('the admin’s tier update changes the key’s limits at once', async () => {
    const { licenseId } = await buy('gpu')
    const patch = PolicyPatch.parse({
      access: { models: ['llm', 'asr'], requests_per_minute: 5, concurrent_streams: 1 },
    })
    await admin().licAdminUpdatePolicy({ id: policyId('gpu'), ...patch }, ctx)
    expect(keys.forLicense(licenseId)).toMatchObject({
      models: ['llm', 'asr'],
      requests_per_minute: 5,
      max_concurrent: 1,
    })
  })

  it('a tier without access refuses the key with a 403 naming why, and it works again when access returns', async () => {
    const { licenseId, licenseKey } = await buy('gpu')
    const { gateway_key: secret } = await buyerHandlers(h.services).licGatewayKey(
      { license_key: licenseKey },
      {} as Parameters<ReturnType<typeof buyerHandlers>['licGatewayKey']>[1],
    )
    keys.followLicenses(licenseStanding(h.services.db, h.clock))
    const who = keys.identify(secret)!
    keys.admit(who)()
    await admin().licAdminUpdatePolicy({ id: policyId('gpu'), ...PolicyPatch.parse({ access: null }) }, ctx)
    expect(() => keys.admit(who)).toThrow(/its license is on a tier that no longer includes API access/)
    await admin().licAdminUpdatePolicy({ id: policyId('gpu'), ...PolicyPatch.parse({ access: ACCESS }) }, ctx)
    expect(() => keys.admit(who)()).not.toThrow()
    expect(keys.forLicense(licenseId)?.requests_per_minute).toBe(30)
  })

  it('an upgrade, paid or the admin’s, applies the new tier’s limits at the next request', async () => {
    const { licenseId, licenseKey } = await buy('gpu')
    const up = await h.payments.tierChanges.upgrade(
      TierTargetInput.parse({ license_key: licenseKey, target_policy_slug: 'gpu-pro' }),
    )
    expect(up.invoice_id).toBeTruthy()
    expect(h.payments.settlement.settle(up.invoice_id!, { actor: 'provider', via: 'test' }).kind).toBe('handled')
    expect(keys.forLicense(licenseId)?.requests_per_minute).toBe(90)

    await h.payments.tierChanges.adminChange({ id: licenseId, to_policy_slug: 'gpu', skip_payment: true, reason: '' })
    expect(keys.forLicense(licenseId)?.requests_per_minute).toBe(30)
  })

  it('a downgrade deferred to the cycle end applies the lower tier’s limits when it applies', async () => {
    const { licenseId } = await buy('gpu-pro')
    h.services.db
      .prepare("UPDATE policies SET is_recurring = 1, renewal_period_days = 30 WHERE slug IN ('gpu', 'gpu-pro')")
      .run()
    const now = h.clock.now()
    h.services.db.prepare('UPDATE licenses SET expires_at = ? WHERE id = ?').run(now + 5 * 86_400_000, licenseId)
    h.services.db
      .prepare(
        `INSERT INTO subscriptions (id, license_id, policy_id, status, listed_currency, listed_value, period_days,
           next_renewal_at, created_at, updated_at) VALUES ('sub-1', ?, ?, 'active', 'SAT', 3000, 30, ?, ?, ?)`,
      )
      .run(licenseId, policyId('gpu-pro'), now + 5 * 86_400_000, now, now)
    await h.payments.tierChanges.adminChange({ id: licenseId, to_policy_slug: 'gpu', skip_payment: true, reason: '' })
    expect(keys.forLicense(licenseId)?.requests_per_minute).toBe(90)
    h.clock.set(now + 5 * 86_400_000)
    expect(h.payments.tierChanges.applyDueDowngrades(h.clock.now())).toBe(1)
    expect(keys.forLicense(licenseId)?.requests_per_minute).toBe(30)
  })
})
