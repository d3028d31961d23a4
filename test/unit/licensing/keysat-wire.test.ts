/**
 * Audit findings on the buyer wire (issue 32 #3, #4, #7): an upgrade opens its provider invoice
 * before it persists anything, revoked and suspended keys are refused like garbage ones, and the
 * answers carry the fields Keysat's server returns (test/fixtures/licensing/keysat-wire.json).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { PolicyInput, TierTargetInput, UpgradeInput } from '../../../src-main/contract/licensing'
import { ApiError } from '../../../src-main/contract/errors'
import type { PaymentProvider } from '../../../src-main/licensing/providers/types'
import { subscriptionHandlers } from '../../../src-main/licensing/subscriptionHandlers'
import { tierChangeHandlers } from '../../../src-main/licensing/tierChangeHandlers'
import { FakeBtcpay } from '../../fakes/btcpay'
import { paymentsHarness, satProduct, tierOn, type Harness } from './payments-harness'

const DAY = 86_400_000
let h: Harness
let btcpay: FakeBtcpay
let productId: string

function tier(slug: string, rank: number | null, price: number, extra: Partial<PolicyInput> = {}): string {
  return tierOn(h, productId, { slug, rank, price }, extra)
}

async function buy(slug: string): Promise<{ id: string; key: string; invoiceId: string }> {
  const s = await h.payments.purchases.start({ product: 'app', policy: slug })
  h.payments.settlement.settle(s.invoice_id, { actor: 'provider', via: 'test' })
  const p = h.payments.purchases.poll(s.invoice_id)
  return { id: p.license_id!, key: p.license_key!, invoiceId: s.invoice_id }
}

const tiers = () => tierChangeHandlers(h.payments.tierChanges)
const subs = () => subscriptionHandlers(h.payments.subscriptions, h.clock)
const ctx = { signal: new AbortController().signal } as Parameters<ReturnType<typeof tiers>['licUpgrade']>[1]
const quoteIn = (key: string, target: string) => TierTargetInput.parse({ license_key: key, target_policy_slug: target })
const upgradeIn = (key: string, target: string, extra: Record<string, unknown> = {}) =>
  UpgradeInput.parse({ license_key: key, target_policy_slug: target, ...extra })
const count = (table: 'invoices' | 'tier_changes'): number =>
  (h.services.db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n

async function failure(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(ApiError)
  return err as ApiError
}

/** The active provider, with its checkout creation replaced. */
function patchCheckout(create: PaymentProvider['createCheckout']): void {
  const providers = h.payments.providers
  const original = providers.active.bind(providers)
  providers.active = () => {
    const p = original()
    return p ? { ...p, kind: p.kind, createCheckout: create } : p
  }
}

beforeEach(async () => {
  btcpay = await new FakeBtcpay().start()
  h = paymentsHarness()
  productId = satProduct(h).productId
  await h.payments.providers.connectBtcpay({
    baseUrl: btcpay.url,
    storeId: btcpay.storeId,
    apiKey: btcpay.apiKey,
    webhookSecret: btcpay.webhookSecret,
  })
  tier('basic', 1, 1000)
  tier('pro', 2, 3000)
})

afterEach(async () => {
  await h.close()
  await btcpay.stop()
})

describe('#3 an upgrade asks the provider first', () => {
  it('a provider failure persists nothing: no invoice, no tier change', async () => {
    const lic = await buy('basic')
    const before = count('invoices')
    patchCheckout(async () => {
      throw new Error('provider down')
    })
    const e = await failure(tiers().licUpgrade(upgradeIn(lic.key, 'pro'), ctx))
    expect(e.status).toBe(502)
    expect(count('invoices')).toBe(before)
    expect(count('tier_changes')).toBe(0)
  })

  it('two upgrades of one licence at once: one provider invoice, one persisted, the other 409', async () => {
    const lic = await buy('basic')
    const before = count('invoices')
    let release: () => void = () => undefined
    const gate = new Promise<void>((r) => (release = r))
    let calls = 0
    patchCheckout(async (req) => {
      calls++
      await gate
      return { providerInvoiceId: `prov-${req.localInvoiceId}`, checkoutUrl: 'https://pay.example/i/1' }
    })
    const first = tiers().licUpgrade(upgradeIn(lic.key, 'pro'), ctx)
    const second = failure(tiers().licUpgrade(upgradeIn(lic.key, 'pro'), ctx))
    await new Promise((r) => setTimeout(r, 20))
    release()
    const [ok, refused] = await Promise.all([first, second])
    expect(refused.status).toBe(409)
    expect(calls).toBe(1)
    expect(ok.provider_invoice_id).toBe(`prov-${ok.invoice_id}`)
    expect(count('invoices')).toBe(before + 1)
    expect(count('tier_changes')).toBe(1)
    // The guard is released: a later upgrade may open its own invoice.
    await tiers().licUpgrade(upgradeIn(lic.key, 'pro'), ctx)
    expect(count('tier_changes')).toBe(2)
  })
})

describe('#4 revoked and suspended keys', () => {
  it('quote, upgrade and cancel answer 401 exactly as for a garbage key, and open nothing', async () => {
    const revoked = await buy('basic')
    const suspended = await buy('basic')
    h.services.licenses.status.revoke(revoked.id, 'refund')
    h.services.licenses.status.suspend(suspended.id, 'chargeback')
    const before = count('invoices')
    const garbage = await failure(tiers().licUpgradeQuote(quoteIn('garbage', 'pro'), ctx))
    for (const key of [revoked.key, suspended.key]) {
      const errs = [
        await failure(tiers().licUpgradeQuote(quoteIn(key, 'pro'), ctx)),
        await failure(tiers().licUpgrade(upgradeIn(key, 'pro'), ctx)),
        await failure(subs().licCancelSubscription({ license_key: key }, ctx)),
      ]
      for (const e of errs) expect([e.status, e.code, e.message]).toEqual([401, garbage.code, garbage.message])
    }
    expect(count('invoices')).toBe(before)
    expect(count('tier_changes')).toBe(0)
  })

  it('/v1/purchase/:id no longer returns the key of a licence revoked since', async () => {
    const lic = await buy('basic')
    expect(h.payments.purchases.poll(lic.invoiceId).license_key).toBe(lic.key)
    h.services.licenses.status.revoke(lic.id, 'refund')
    expect(h.payments.purchases.poll(lic.invoiceId)).toMatchObject({ license_key: null, license_id: lic.id })
  })
})

describe('#7 Keysat shapes', () => {
  it('the quote carries the policy ids, the next renewal charge and period, and "immediate"', async () => {
    const lic = await buy('basic')
    const ids = Object.fromEntries(h.services.catalog.policyRows(productId).map((p) => [p.slug, p.id]))
    const q = await tiers().licUpgradeQuote(quoteIn(lic.key, 'pro'), ctx)
    expect(q).toMatchObject({
      from_policy_id: ids.basic,
      from_policy_slug: 'basic',
      to_policy_id: ids.pro,
      to_policy_slug: 'pro',
      effective_at: 'immediate',
      next_renewal_charge: null,
      next_renewal_period_days: null,
    })
  })

  it('a recurring quote names the next renewal charge and period; a downgrade its date', async () => {
    const lic = await buy('basic')
    h.services.db.prepare('UPDATE policies SET is_recurring = 1, renewal_period_days = 30').run()
    const now = h.clock.now()
    h.services.db
      .prepare(
        `INSERT INTO subscriptions (id, license_id, policy_id, status, listed_currency, listed_value, period_days,
           next_renewal_at, created_at, updated_at) VALUES ('s1', ?, ?, 'active', 'SAT', 1000, 30, ?, ?, ?)`,
      )
      .run(lic.id, h.services.licenses.lookup.view(lic.id).policy_id, now + 15 * DAY, now, now)
    const up = await tiers().licUpgradeQuote(quoteIn(lic.key, 'pro'), ctx)
    expect(up).toMatchObject({ effective_at: 'immediate', next_renewal_charge: 3000, next_renewal_period_days: 30 })
    h.services.db.prepare("UPDATE licenses SET policy_id = (SELECT id FROM policies WHERE slug = 'pro')").run()
    h.services.db.prepare("UPDATE subscriptions SET policy_id = (SELECT id FROM policies WHERE slug = 'pro')").run()
    const down = await tiers().licUpgradeQuote(quoteIn(lic.key, 'basic'), ctx)
    expect(down).toMatchObject({ effective_at: new Date(now + 15 * DAY).toISOString(), next_renewal_charge: 1000 })
  })

  it('the upgrade answers provider_invoice_id and sends the buyer to an allowed redirect_url', async () => {
    const lic = await buy('basic')
    const back = 'http://127.0.0.1:9/after-upgrade'
    h.services.db.prepare('UPDATE products SET return_url_prefix = ?').run('http://127.0.0.1:9/')
    const up = await tiers().licUpgrade(upgradeIn(lic.key, 'pro', { redirect_url: back }), ctx)
    const inv = btcpay.invoices.get(up.provider_invoice_id)
    expect(inv?.redirectURL).toBe(back)
    expect(up.checkout_url).toBe(inv?.checkoutLink)
  })

  it('a redirect_url off the allowed addresses is refused before anything is opened', async () => {
    const lic = await buy('basic')
    const before = btcpay.invoices.size
    const e = await failure(
      tiers().licUpgrade(upgradeIn(lic.key, 'pro', { redirect_url: 'https://evil.example/' }), ctx),
    )
    expect([e.status, e.code]).toEqual([400, 'redirect_not_allowed'])
    expect(btcpay.invoices.size).toBe(before)
    expect(count('tier_changes')).toBe(0)
  })

  it('a zero-total purchase answers an empty checkout_url and the key inline', async () => {
    tier('free', null, 0)
    const s = await h.payments.purchases.start({ product: 'app', policy: 'free' })
    const p = h.payments.purchases.poll(s.invoice_id)
    expect(s).toMatchObject({ checkout_url: '', license_key: p.license_key, license_id: p.license_id })
    expect(p.license_key).toMatch(/^LIC1-/)
    const paid = await h.payments.purchases.start({ product: 'app', policy: 'basic' })
    expect(paid.license_key).toBeUndefined()
    expect(paid.license_id).toBeUndefined()
  })

  it('the buyer cancel names the subscription', async () => {
    tier('monthly', 3, 0, { is_recurring: true, renewal_period_days: 30 })
    const lic = await buy('monthly')
    const sub = h.services.db.prepare('SELECT id FROM subscriptions WHERE license_id = ?').get(lic.id) as { id: string }
    const out = await subs().licCancelSubscription({ license_key: lic.key }, ctx)
    expect(out).toMatchObject({ ok: true, subscription_id: sub.id, status: 'cancelled' })
    const again = await subs().licCancelSubscription({ license_key: lic.key }, ctx)
    expect(again).toMatchObject({ subscription_id: sub.id, already: 'cancelled' })
  })
})
