import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { PolicyInput, TierTargetInput } from '../../../src-main/contract/licensing'
import { ApiError } from '../../../src-main/contract/errors'
import { proratedCharge, type TierChanges } from '../../../src-main/licensing/tierChanges'
import { tierChangeHandlers } from '../../../src-main/licensing/tierChangeHandlers'
import { FakeBtcpay } from '../../fakes/btcpay'
import { paymentsHarness, satProduct, tierOn, type Harness } from './payments-harness'

const DAY = 86_400_000
let h: Harness
let btcpay: FakeBtcpay
let tc: TierChanges
let productId: string

function tier(slug: string, rank: number | null, price: number, extra: Partial<PolicyInput> = {}): string {
  return tierOn(h, productId, { slug, rank, price }, { max_machines: rank ?? 1, ...extra })
}

/** A licence bought on `slug`: its id and signed key. */
async function buy(slug: string): Promise<{ id: string; key: string }> {
  const s = await h.payments.purchases.start({ product: 'app', policy: slug })
  h.payments.settlement.settle(s.invoice_id, { actor: 'provider', via: 'test' })
  const p = h.payments.purchases.poll(s.invoice_id)
  return { id: p.license_id!, key: p.license_key! }
}

/** The subscription L1's settlement branch creates, written directly: cycle ends `endsIn` from now. */
function subscribe(licenseId: string, policyId: string, value: number, endsIn: number): void {
  const now = h.clock.now()
  h.services.db.prepare('UPDATE licenses SET expires_at = ? WHERE id = ?').run(now + endsIn, licenseId)
  h.services.db
    .prepare(
      `INSERT INTO subscriptions (id, license_id, policy_id, status, listed_currency, listed_value, period_days,
         next_renewal_at, created_at, updated_at) VALUES (?, ?, ?, 'active', 'SAT', ?, 30, ?, ?, ?)`,
    )
    .run(`sub-${licenseId}`, licenseId, policyId, value, now + endsIn, now, now)
}

const handlers = () => tierChangeHandlers(tc)
const ctx = { signal: new AbortController().signal } as Parameters<ReturnType<typeof handlers>['licUpgrade']>[1]
const input = (key: string, target: string, extra: Record<string, unknown> = {}) =>
  TierTargetInput.parse({ license_key: key, target_policy_slug: target, ...extra })
async function failure(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(ApiError)
  return err as ApiError
}
/** Events the tier changes handed to the outbox (inside their transactions). */
let sent: string[] = []
/** And what they carried. */
let payloads: { event: string; data: unknown }[] = []
const events = (name: string) => ({ n: sent.filter((e) => e === name).length })

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
  sent = []
  payloads = []
  // The daemon's own tier changes, wired first in settlement; their events are watched at the outbox.
  tc = h.payments.tierChanges
  const enqueue = h.payments.outbox.enqueue.bind(h.payments.outbox)
  vi.spyOn(h.payments.outbox, 'enqueue').mockImplementation((event, data, now) => {
    sent.push(event)
    payloads.push({ event, data })
    enqueue(event, data, now)
  })
})

afterEach(async () => {
  await h.close()
  await btcpay.stop()
})

describe('proration', () => {
  it('charges the rest of the cycle of the price difference, rounded up', () => {
    const now = Date.UTC(2026, 0, 1)
    const base = { fromValue: 1000, fromPeriodDays: 30, toValue: 3000, toPeriodDays: 30, now }
    expect(proratedCharge({ ...base, cycleEnd: now + 15 * DAY })).toBe(1000)
    expect(proratedCharge({ ...base, cycleEnd: now + 30 * DAY })).toBe(2000)
    expect(proratedCharge({ ...base, cycleEnd: now + 10 * DAY })).toBe(667)
    expect(proratedCharge({ ...base, cycleEnd: now })).toBe(0)
    expect(proratedCharge({ ...base, toValue: 500, cycleEnd: now + 15 * DAY })).toBe(0)
  })
})

describe('buyer quote and upgrade', () => {
  beforeEach(() => {
    tier('basic', 1, 1000)
    tier('pro', 2, 3000)
    tier('same', 3, 3000)
    tier('hidden-comp', null, 0)
  })

  it('a garbage key is 401, the same whether or not the tier exists', async () => {
    const errs = [
      await failure(handlers().licUpgradeQuote(input('garbage', 'pro'), ctx)),
      await failure(handlers().licUpgradeQuote(input('garbage', 'no-such-tier'), ctx)),
      await failure(handlers().licUpgrade(input('garbage', 'pro'), ctx)),
      await failure(handlers().licUpgrade(input('garbage', 'no-such-tier'), ctx)),
    ]
    for (const e of errs) expect([e.status, e.code, e.message]).toEqual([401, 'unauthorized', errs[0]!.message])
  })

  it('an unknown tier is 404 for a valid key', async () => {
    const lic = await buy('basic')
    expect((await failure(handlers().licUpgradeQuote(input(lic.key, 'no-such-tier'), ctx))).status).toBe(404)
    expect((await failure(handlers().licUpgrade(input(lic.key, 'no-such-tier'), ctx))).status).toBe(404)
  })

  it('a perpetual upgrade quotes the listed-price difference, effective now', async () => {
    const lic = await buy('basic')
    const q = await handlers().licUpgradeQuote(input(lic.key, 'pro'), ctx)
    expect(q).toMatchObject({
      direction: 'upgrade',
      proration_charge_value: 2000,
      amount_sats: 2000,
      effective_at: 'immediate',
      next_renewal_value: null,
    })
  })

  it('a buyer downgrade is refused as admin-only; a tier off the ladder is no buyer target', async () => {
    const lic = await buy('pro')
    const e = await failure(handlers().licUpgrade(input(lic.key, 'basic'), ctx))
    expect(e.status).toBe(400)
    expect(e.message).toContain('admin-only')
    expect((await failure(handlers().licUpgrade(input(lic.key, 'hidden-comp'), ctx))).status).toBe(400)
  })

  it('a zero-charge upgrade is refused (admin-only path)', async () => {
    const lic = await buy('pro')
    const e = await failure(handlers().licUpgrade(input(lic.key, 'same'), ctx))
    expect(e.status).toBe(400)
    expect(h.services.db.prepare('SELECT count(*) AS n FROM tier_changes').get()).toEqual({ n: 0 })
  })

  it('ignores client-supplied amounts and leaves the licence unchanged until paid', async () => {
    const lic = await buy('basic')
    const parsed = input(lic.key, 'pro', { amount_sats: 1, proration_charge_value: 1, listed_value: 1 })
    expect(Object.keys(parsed).sort()).toEqual(['license_key', 'target_policy_slug'])
    const up = await handlers().licUpgrade(parsed, ctx)
    expect(up).toMatchObject({ amount_sats: 2000, proration_charge_value: 2000, from_policy_slug: 'basic' })
    expect(up.poll_url).toMatch(new RegExp(`^https?://[^/]+/v1/purchase/${up.invoice_id}$`))
    expect(h.services.licenses.lookup.view(lic.id).policy_slug).toBe('basic')
    const inv = h.services.db.prepare('SELECT kind, amount_sats, status FROM invoices WHERE id = ?').get(up.invoice_id)
    expect(inv).toEqual({ kind: 'upgrade', amount_sats: 2000, status: 'pending' })
  })

  it('a recurring upgrade is prorated for the rest of the cycle; a downgrade waits for the renewal', async () => {
    const lic = await buy('basic')
    const basic = h.services.licenses.lookup.view(lic.id).policy_id!
    h.services.db.prepare('UPDATE policies SET is_recurring = 1, renewal_period_days = 30').run()
    subscribe(lic.id, basic, 1000, 15 * DAY)
    const q = await handlers().licUpgradeQuote(input(lic.key, 'pro'), ctx)
    expect(q).toMatchObject({ proration_charge_value: 1000, next_renewal_value: 3000 })
    expect(q.effective_at).toBe('immediate')
    h.services.db
      .prepare('UPDATE subscriptions SET policy_id = (SELECT id FROM policies WHERE slug = ?), listed_value = 3000')
      .run('pro')
    h.services.db.prepare("UPDATE licenses SET policy_id = (SELECT id FROM policies WHERE slug = 'pro')").run()
    const down = await handlers().licUpgradeQuote(input(lic.key, 'basic'), ctx)
    expect(down).toMatchObject({ direction: 'downgrade', proration_charge_value: 0 })
    expect(down.effective_at).toBe(new Date(h.clock.now() + 15 * DAY).toISOString())
  })

  it('a renewal in backoff keeps the cycle end at the due date, not at the next retry', async () => {
    const lic = await buy('pro')
    const pro = h.services.licenses.lookup.view(lic.id).policy_id!
    h.services.db.prepare('UPDATE policies SET is_recurring = 1, renewal_period_days = 30').run()
    subscribe(lic.id, pro, 3000, 15 * DAY)
    // Three failed renewals later the next attempt is hours past the paid cycle's end.
    h.services.db.prepare('UPDATE subscriptions SET next_renewal_at = due_at + ?').run(2 * 3_600_000)
    const down = await handlers().licUpgradeQuote(input(lic.key, 'basic'), ctx)
    expect(down.effective_at).toBe(new Date(h.clock.now() + 15 * DAY).toISOString())
  })
})

describe('settlement of a tier change', () => {
  beforeEach(() => {
    tier('basic', 1, 1000)
    tier('pro', 2, 3000, { max_machines: 5, grace_period_days: 14 })
  })

  it('applies once: same licence and key, new entitlements in validate; a redelivery is a no-op', async () => {
    const lic = await buy('basic')
    const up = await handlers().licUpgrade(input(lic.key, 'pro'), ctx)
    const first = h.payments.settlement.settle(up.invoice_id, { actor: 'provider', via: 'test' })
    expect(first).toEqual({ kind: 'handled', branch: 'tier_change', licenseId: lic.id })
    const v = h.services.licenses.validation.validate({ key: lic.key })
    expect(v).toMatchObject({ ok: true, license_id: lic.id, entitlements: ['pro'], max_machines: 5 })
    expect(h.services.licenses.lookup.view(lic.id)).toMatchObject({ policy_slug: 'pro', grace_period_days: 14 })
    expect(h.services.db.prepare('SELECT count(*) AS n FROM licenses').get()).toEqual({ n: 1 })
    expect(events('license.tier_changed').n).toBe(1)
    const again = h.payments.settlement.settle(up.invoice_id, { actor: 'provider', via: 'replay' })
    expect(again.kind).toBe('already_settled')
    // The branch itself, handed the same invoice again, changes nothing either.
    const inv = h.payments.purchases.poll(up.invoice_id)
    expect(
      tc.applyForInvoice({ id: inv.invoice_id } as Parameters<TierChanges['applyForInvoice']>[0], h.clock.now()),
    ).toEqual({
      licenseId: lic.id,
    })
    expect(events('license.tier_changed').n).toBe(1)
    expect(tc.history(lic.id).tier_changes).toHaveLength(1)
  })
  it('a second paid change to the tier the licence already has changes nothing', async () => {
    const lic = await buy('basic')
    const a = await handlers().licUpgrade(input(lic.key, 'pro'), ctx)
    const b = await handlers().licUpgrade(input(lic.key, 'pro'), ctx)
    h.payments.settlement.settle(a.invoice_id, { actor: 'provider', via: 'test' })
    const updated = h.services.licenses.lookup.view(lic.id).updated_at
    h.clock.advance(1000)
    expect(h.payments.settlement.settle(b.invoice_id, { actor: 'provider', via: 'test' }).kind).toBe('handled')
    expect(h.services.licenses.lookup.view(lic.id).updated_at).toBe(updated)
    expect(events('license.tier_changed').n).toBe(1)
  })
})

describe('admin change-tier', () => {
  beforeEach(() => {
    tier('basic', 1, 1000)
    tier('pro', 2, 3000)
    tier('comp', null, 0, { entitlements: ['comp'] })
  })

  it('skip_payment applies now: no invoice, no charge, actor admin', async () => {
    const lic = await buy('basic')
    const out = await handlers().licAdminChangeTier(
      { id: lic.id, to_policy_slug: 'pro', skip_payment: true, reason: 'goodwill' },
      ctx,
    )
    expect(out.invoice_id).toBeNull()
    expect(out.tier_change).toMatchObject({
      actor: 'admin',
      proration_charge_value: 0,
      invoice_id: null,
      reason: 'goodwill',
    })
    expect(out.tier_change.applied_at).toBe(h.clock.now())
    expect(h.services.licenses.validation.validate({ key: lic.key })).toMatchObject({ ok: true, entitlements: ['pro'] })
    const out2 = await handlers().licAdminChangeTier(
      { id: lic.id, to_policy_slug: 'comp', skip_payment: false, reason: '' },
      ctx,
    )
    expect(out2.tier_change).toMatchObject({ direction: 'downgrade', to_policy_slug: 'comp' })
    expect(
      (await handlers().licAdminTierChanges({ id: lic.id }, ctx)).tier_changes.map((t) => t.to_policy_slug),
    ).toEqual(['comp', 'pro'])
  })

  it('without skip_payment an upgrade opens an invoice to forward', async () => {
    const lic = await buy('basic')
    const out = await handlers().licAdminChangeTier(
      { id: lic.id, to_policy_slug: 'pro', skip_payment: false, reason: '' },
      ctx,
    )
    expect(out.checkout_url).toMatch(/^http:\/\/127\.0\.0\.1/)
    expect(out.tier_change).toMatchObject({ proration_charge_value: 2000, applied_at: null, actor: 'admin' })
    expect(h.services.licenses.lookup.view(lic.id).policy_slug).toBe('basic')
  })

  it('a recurring downgrade is recorded now and applied at the cycle end, once', async () => {
    const lic = await buy('pro')
    const pro = h.services.licenses.lookup.view(lic.id).policy_id!
    h.services.db
      .prepare("UPDATE policies SET is_recurring = 1, renewal_period_days = 30 WHERE slug IN ('basic','pro')")
      .run()
    subscribe(lic.id, pro, 3000, 10 * DAY)
    const cycleEnd = h.clock.now() + 10 * DAY
    const out = await handlers().licAdminChangeTier(
      { id: lic.id, to_policy_slug: 'basic', skip_payment: true, reason: '' },
      ctx,
    )
    expect(out.tier_change).toMatchObject({ direction: 'downgrade', effective_at: cycleEnd, applied_at: null })
    expect(tc.applyDueDowngrades(h.clock.now())).toBe(0)
    expect(h.services.licenses.lookup.view(lic.id).policy_slug).toBe('pro')
    h.clock.set(cycleEnd)
    expect(tc.applyDueDowngrades(h.clock.now())).toBe(1)
    expect(tc.applyDueDowngrades(h.clock.now())).toBe(0)
    expect(h.services.licenses.lookup.view(lic.id)).toMatchObject({ policy_slug: 'basic', entitlements: ['basic'] })
    expect(h.services.db.prepare('SELECT policy_id, listed_value FROM subscriptions').get()).toEqual({
      policy_id: h.services.licenses.lookup.view(lic.id).policy_id,
      listed_value: 1000,
    })
    expect(events('license.tier_changed').n).toBe(1)
  })

  it('a move onto a one-off tier ends the subscription the way a cancellation does: event and audit', async () => {
    const lic = await buy('pro')
    const pro = h.services.licenses.lookup.view(lic.id).policy_id!
    h.services.db.prepare("UPDATE policies SET is_recurring = 1, renewal_period_days = 30 WHERE slug = 'pro'").run()
    subscribe(lic.id, pro, 3000, 10 * DAY)
    const out = await handlers().licAdminChangeTier(
      { id: lic.id, to_policy_slug: 'comp', skip_payment: true, reason: 'x' },
      ctx,
    )
    expect(out.tier_change.applied_at).toBe(h.clock.now())
    expect(h.services.licenses.lookup.view(lic.id).policy_slug).toBe('comp')
    const sub = h.services.db.prepare('SELECT status, cancelled_at FROM subscriptions').get()
    expect(sub).toEqual({ status: 'cancelled', cancelled_at: h.clock.now() })
    expect(events('subscription.cancelled').n).toBe(1)
    expect(payloads.filter((p) => p.event === 'subscription.cancelled').map((p) => p.data)).toMatchObject([
      {
        subscription_id: `sub-${lic.id}`,
        license_id: lic.id,
        actor: 'admin',
        reason: 'moved to the one-off tier comp',
      },
    ])
    const audit = h.services.audit.list({ limit: 50 }).map((e) => e.action)
    expect(audit).toContain('subscription.cancel')
  })
})
