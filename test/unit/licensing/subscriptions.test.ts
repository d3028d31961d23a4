import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { PolicyInput } from '../../../src-main/contract/licensing'
import { ApiError } from '../../../src-main/contract/errors'
import type { PaymentProvider } from '../../../src-main/licensing/providers/types'
import { MAX_FAILURES, RENEWAL_BACKOFF_MS, RenewalWorker, STALE_CLAIM_MS } from '../../../src-main/licensing/renewals'
import { FakeBtcpay } from '../../fakes/btcpay'
import { paymentsHarness, satProduct, type Harness } from './payments-harness'

const DAY = 86_400_000
let h: Harness
let btcpay: FakeBtcpay

beforeEach(async () => {
  btcpay = await new FakeBtcpay().start()
  h = paymentsHarness()
  const { productId } = satProduct(h, 'app', 10_000)
  const tier = (slug: string, extra: Partial<PolicyInput>) =>
    h.services.catalog.createPolicy(productId, PolicyInput.parse({ slug, name: slug, grace_period_days: 3, ...extra }))
  tier('monthly', { is_recurring: true, renewal_period_days: 30, price_value_override: 5_000 })
  tier('trial', { is_recurring: true, renewal_period_days: 30, trial_days: 14, price_value_override: 5_000 })
  await h.payments.providers.connectBtcpay({
    baseUrl: btcpay.url,
    storeId: btcpay.storeId,
    apiKey: btcpay.apiKey,
    webhookSecret: btcpay.webhookSecret,
  })
})

afterEach(async () => {
  await h.close()
  await btcpay.stop()
})

const db = () => h.services.db
const settle = (invoiceId: string) => h.payments.settlement.settle(invoiceId, { actor: 'provider', via: 'test' })
const subs = () => h.payments.subscriptions.list({ limit: 100 }).subscriptions
const events = (name: string) =>
  (
    db().prepare('SELECT payload FROM webhook_deliveries WHERE event = ? ORDER BY created_at').all(name) as {
      payload: string
    }[]
  ).map((r) => JSON.parse(r.payload) as { data: Record<string, unknown> })
const licenseExpiry = (id: string) =>
  (db().prepare('SELECT expires_at FROM licenses WHERE id = ?').get(id) as { expires_at: number | null }).expires_at
const renewalInvoices = () =>
  db().prepare("SELECT * FROM invoices WHERE kind = 'renewal' ORDER BY created_at, id").all() as {
    id: string
    status: string
    amount_sats: number
    checkout_url: string | null
    listed_currency: string | null
    exchange_rate_centibps: number | null
    exchange_rate_source: string | null
  }[]

async function buy(policy = 'monthly') {
  const s = await h.payments.purchases.start({ product: 'app', policy })
  if (s.status !== 'settled') expect(settle(s.invoice_id).kind).toBe('issued')
  const poll = h.payments.purchases.poll(s.invoice_id)
  const sub = subs().find((x) => x.license_id === poll.license_id)!
  return { invoiceId: s.invoice_id, key: poll.license_key!, licenseId: poll.license_id!, sub }
}

/** Every subscriber endpoint gets the events; a closed loopback port stands in for a seller whose endpoint is down. */
function downEndpoint() {
  h.payments.outbox.createEndpoint({
    url: 'http://127.0.0.1:9/hook',
    secret: 'a-long-enough-secret-123',
    events: ['*'],
    description: '',
    active: true,
  })
}

/** The active provider, with its checkout creation replaced. */
function patchCheckout(create: PaymentProvider['createCheckout']): () => void {
  const providers = h.payments.providers
  const original = providers.active.bind(providers)
  providers.active = () => {
    const p = original()
    return p ? { ...p, kind: p.kind, createCheckout: create } : p
  }
  return () => {
    providers.active = original
  }
}

describe('subscriptions: creation', () => {
  it('buying a recurring tier issues an expiring licence and one active subscription with cycle 1', async () => {
    downEndpoint()
    const now = h.clock.now()
    const { licenseId, invoiceId, key, sub } = await buy()
    expect(licenseExpiry(licenseId)).toBe(now + 30 * DAY)
    expect(sub).toMatchObject({
      status: 'active',
      listed_currency: 'SAT',
      listed_value: 5_000,
      period_days: 30,
      next_renewal_at: now + 30 * DAY,
      cycles: [{ cycle_number: 1, invoice_id: invoiceId, status: 'settled' }],
    })
    expect(events('subscription.created')).toHaveLength(1)
    const v = h.services.licenses.validation.validate({ key })
    expect(v).toMatchObject({ ok: true, expires_at: new Date(now + 30 * DAY).toISOString() })
    h.clock.advance(31 * DAY)
    expect(h.services.licenses.validation.validate({ key })).toMatchObject({ ok: true, in_grace_period: true })
  })

  it('a trial tier issues the licence at once and free, the key inline; the first renewal at trial end bills', async () => {
    downEndpoint()
    const now = h.clock.now()
    const started = await h.payments.purchases.start({ product: 'app', policy: 'trial', code: 'IGNORED' })
    // Keysat's free-trial answer: settled, nothing charged, the key in the purchase answer itself.
    expect(started).toMatchObject({ status: 'settled', amount_sats: 0, discount_applied_sats: 0, provider: 'free' })
    expect(started.base_price_sats).toBe(5_000)
    expect(started.license_key).toMatch(/^LIC1-/)
    expect(btcpay.invoices.size).toBe(0)
    const licenseId = started.license_id!
    const sub = subs().find((x) => x.license_id === licenseId)!
    expect(licenseExpiry(licenseId)).toBe(now + 14 * DAY)
    expect(sub).toMatchObject({
      status: 'active',
      listed_value: 5_000,
      next_renewal_at: now + 14 * DAY,
      due_at: now + 14 * DAY,
      cycles: [{ cycle_number: 1, invoice_id: started.invoice_id, status: 'settled' }],
    })
    expect(events('subscription.created')[0]!.data).toMatchObject({ trial_days: 14, listed_value: 5_000 })
    expect(h.services.licenses.validation.validate({ key: started.license_key! })).toMatchObject({
      ok: true,
      is_trial: true,
    })

    // Nothing is billed during the trial; at its end the first paid cycle is.
    h.clock.advance(14 * DAY - 1)
    expect((await h.payments.renewals.tick()).claimed).toBe(0)
    h.clock.advance(1)
    expect((await h.payments.renewals.tick()).invoiced).toBe(1)
    const [inv] = renewalInvoices()
    expect(inv!.amount_sats).toBe(5_000)
    settle(inv!.id)
    expect(licenseExpiry(licenseId)).toBe(now + 44 * DAY)
    expect(h.payments.subscriptions.view(sub.id)).toMatchObject({ status: 'active', next_renewal_at: now + 44 * DAY })
    // Paid now: the licence no longer answers as a trial.
    expect(h.services.licenses.validation.validate({ key: started.license_key! })).toMatchObject({
      ok: true,
      is_trial: false,
    })
  })

  it('a trial nobody pays for lapses at the trial end plus the grace days', async () => {
    const now = h.clock.now()
    const started = await h.payments.purchases.start({ product: 'app', policy: 'trial' })
    const sub = subs().find((x) => x.license_id === started.license_id)!
    h.clock.advance(14 * DAY)
    await h.payments.renewals.tick()
    h.clock.advance(3 * DAY - 1)
    expect((await h.payments.renewals.tick()).lapsed).toBe(0)
    h.clock.advance(1)
    expect((await h.payments.renewals.tick()).lapsed).toBe(1)
    expect(h.payments.subscriptions.view(sub.id).status).toBe('lapsed')
    expect(h.clock.now()).toBe(now + 17 * DAY)
  })

  it('the same buyer may start another trial (as Keysat: no per-buyer limit)', async () => {
    const a = await h.payments.purchases.start({ product: 'app', policy: 'trial', buyer_email: 'ada@example.com' })
    const b = await h.payments.purchases.start({ product: 'app', policy: 'trial', buyer_email: 'ada@example.com' })
    expect(a.license_id).not.toBe(b.license_id)
    expect(b.status).toBe('settled')
  })

  it('a tier price change after purchase keeps the snapshot for renewals', async () => {
    const { sub } = await buy()
    const policy = h.services.catalog.policyBySlug(h.services.catalog.productBySlug('app')!.id, 'monthly')!
    h.services.catalog.updatePolicy(policy.id, { price_value_override: 9_999 })
    h.clock.advance(30 * DAY)
    await h.payments.renewals.tick()
    expect(h.payments.subscriptions.view(sub.id).listed_value).toBe(5_000)
    expect(renewalInvoices().map((i) => i.amount_sats)).toEqual([5_000])
  })
})

describe('renewal worker', () => {
  it('nothing is billed before the cycle ends', async () => {
    await buy()
    h.clock.advance(30 * DAY - 1)
    expect((await h.payments.renewals.tick()).claimed).toBe(0)
    expect(renewalInvoices()).toHaveLength(0)
  })

  it('bills a due subscription, then settling it extends the licence once', async () => {
    downEndpoint()
    const { sub, licenseId } = await buy()
    const start = h.clock.now()
    h.clock.advance(30 * DAY)
    const report = await h.payments.renewals.tick()
    expect(report).toMatchObject({ claimed: 1, invoiced: 1, failed: 0 })
    const after = h.payments.subscriptions.view(sub.id)
    expect(after).toMatchObject({ status: 'past_due', next_renewal_at: start + 60 * DAY })
    expect(after.last_renewal_attempt_at).toBe(h.clock.now())
    expect(after.cycles.map((c) => [c.cycle_number, c.status])).toEqual([
      [1, 'settled'],
      [2, 'pending'],
    ])
    const [inv] = renewalInvoices()
    expect(inv!.checkout_url).toMatch(/^http/)
    expect(events('subscription.renewal_pending')[0]!.data).toMatchObject({ checkout_url: inv!.checkout_url })

    // The same settle delivered 20 times at once extends the licence once.
    await Promise.all(Array.from({ length: 20 }, async () => settle(inv!.id)))
    expect(licenseExpiry(licenseId)).toBe(start + 60 * DAY)
    expect(h.payments.subscriptions.view(sub.id)).toMatchObject({ status: 'active', consecutive_failures: 0 })
    expect(events('subscription.renewed')).toHaveLength(1)
    // Nothing more until the next cycle ends.
    expect((await h.payments.renewals.tick()).claimed).toBe(0)
  })

  it('a webhook endpoint that is down never blocks the worker or the settlement', async () => {
    downEndpoint()
    const { licenseId, sub } = await buy()
    await h.payments.outbox.tick()
    h.clock.advance(30 * DAY)
    expect((await h.payments.renewals.tick()).invoiced).toBe(1)
    await h.payments.outbox.tick()
    const [inv] = renewalInvoices()
    expect(settle(inv!.id).kind).toBe('handled')
    expect(licenseExpiry(licenseId)).toBe(sub.next_renewal_at + 30 * DAY)
    const tried = db()
      .prepare("SELECT status, attempts FROM webhook_deliveries WHERE event LIKE 'subscription.%' AND attempts > 0")
      .all() as { status: string }[]
    expect(tried.length).toBeGreaterThan(0)
    expect(tried.every((d) => d.status !== 'delivered')).toBe(true)
  })

  it('two workers ticking at once bill each cycle once', async () => {
    for (let i = 0; i < 5; i++) await buy()
    h.clock.advance(30 * DAY)
    const other = new RenewalWorker({
      db: db(),
      clock: h.clock,
      logger: h.services.deps.logger,
      subscriptions: h.payments.subscriptions,
      purchases: h.payments.purchases,
      pricing: h.services.pricing,
      settlement: h.payments.settlement,
      outbox: h.payments.outbox,
    })
    await Promise.all([h.payments.renewals.tick(), other.tick(), h.payments.renewals.tick()])
    expect(renewalInvoices().filter((i) => i.status === 'pending')).toHaveLength(5)
    const cycles = db()
      .prepare('SELECT subscription_id, count(*) AS n FROM subscription_invoices WHERE cycle_number = 2 GROUP BY 1')
      .all() as { n: number }[]
    expect(cycles).toHaveLength(5)
    expect(cycles.every((c) => c.n === 1)).toBe(true)
  })

  it('at most 25 per tick, oldest due first', async () => {
    for (let i = 0; i < 27; i++) {
      await buy()
      h.clock.advance(1000)
    }
    const first = subs().sort((a, b) => a.next_renewal_at - b.next_renewal_at)[0]!
    h.clock.advance(31 * DAY)
    expect((await h.payments.renewals.tick()).claimed).toBe(25)
    expect(h.payments.subscriptions.view(first.id).cycles).toHaveLength(2)
    expect((await h.payments.renewals.tick()).claimed).toBe(2)
  })

  it('a crash between the claim and the checkout: the next tick repairs it without a double bill', async () => {
    const { sub } = await buy()
    h.clock.advance(30 * DAY)
    // The worker "dies" while the provider call is in flight: it never returns.
    const restore = patchCheckout(() => new Promise(() => undefined))
    void h.payments.renewals.tick()
    await new Promise((r) => setTimeout(r, 50))
    restore()
    expect(renewalInvoices()).toHaveLength(1)
    expect(renewalInvoices()[0]!.checkout_url).toBeNull()

    // A restarted daemon (a fresh worker) ticks: too early, the claim may still be alive.
    const restarted = () =>
      new RenewalWorker({
        db: db(),
        clock: h.clock,
        logger: h.services.deps.logger,
        subscriptions: h.payments.subscriptions,
        purchases: h.payments.purchases,
        pricing: h.services.pricing,
        settlement: h.payments.settlement,
        outbox: h.payments.outbox,
      })
    expect((await restarted().tick()).repaired).toBe(0)
    h.clock.advance(STALE_CLAIM_MS)
    const report = await restarted().tick()
    expect(report).toMatchObject({ repaired: 1, invoiced: 1 })
    const invs = renewalInvoices()
    expect(invs.map((i) => i.status)).toEqual(['invalid', 'pending'])
    expect(invs[1]!.checkout_url).toMatch(/^http/)
    const view = h.payments.subscriptions.view(sub.id)
    expect(view.cycles.map((c) => [c.cycle_number, c.invoice_id])).toEqual([
      [1, expect.any(String)],
      [2, invs[1]!.id],
    ])
    expect(view.next_renewal_at).toBe(sub.next_renewal_at + 30 * DAY)
  })

  it('a provider that refuses: next_renewal_at moves 5 min, 30 min, 2 h, 6 h, 12 h; renewals stop after 5', async () => {
    downEndpoint()
    const { sub } = await buy()
    const restore = patchCheckout(async () => {
      throw new ApiError('upstream_error', 'store refused the invoice')
    })
    h.clock.advance(30 * DAY)
    expect((await h.payments.renewals.tick()).failed).toBe(1)
    for (let n = 1; n <= MAX_FAILURES; n++) {
      const wait = RENEWAL_BACKOFF_MS[n - 1]!
      const view = h.payments.subscriptions.view(sub.id)
      // Every reader of next_renewal_at sees the retry time; the original due date stays.
      expect(view).toMatchObject({
        consecutive_failures: n,
        next_renewal_at: h.clock.now() + wait,
        due_at: sub.next_renewal_at,
      })
      expect(events('subscription.renewal_failed')[n - 1]!.data.next_attempt_at).toBe(
        n < MAX_FAILURES ? new Date(h.clock.now() + wait).toISOString() : null,
      )
      if (n === MAX_FAILURES) break
      h.clock.advance(wait - 1)
      expect((await h.payments.renewals.tick()).claimed).toBe(0)
      h.clock.advance(1)
      expect((await h.payments.renewals.tick()).failed).toBe(1)
    }
    const stopped = h.payments.subscriptions.view(sub.id)
    expect(stopped).toMatchObject({ status: 'past_due', consecutive_failures: 5 })
    expect(stopped.failure_reason).toContain('stopped')
    expect(stopped.cycles).toHaveLength(1)
    expect(events('subscription.renewal_failed')).toHaveLength(5)
    restore()
    h.clock.advance(RENEWAL_BACKOFF_MS[4])
    expect((await h.payments.renewals.tick()).claimed).toBe(0)
  })

  it('a renewal that succeeds after a backoff bills the cycle from its original due date', async () => {
    downEndpoint()
    const { sub, licenseId } = await buy()
    const restore = patchCheckout(async () => {
      throw new ApiError('upstream_error', 'store refused the invoice')
    })
    h.clock.advance(30 * DAY)
    expect((await h.payments.renewals.tick()).failed).toBe(1)
    restore()
    h.clock.advance(RENEWAL_BACKOFF_MS[0])
    expect((await h.payments.renewals.tick()).invoiced).toBe(1)
    expect(h.payments.subscriptions.view(sub.id).next_renewal_at).toBe(sub.next_renewal_at + 30 * DAY)
    expect(events('subscription.renewal_pending')[0]!.data.due_at).toBe(new Date(sub.next_renewal_at).toISOString())
    settle(renewalInvoices()[1]!.id)
    expect(licenseExpiry(licenseId)).toBe(sub.next_renewal_at + 30 * DAY)
    expect(h.payments.subscriptions.view(sub.id)).toMatchObject({
      status: 'active',
      next_renewal_at: sub.next_renewal_at + 30 * DAY,
      due_at: sub.next_renewal_at + 30 * DAY,
    })
  })

  it('backoff never extends grace: a failing subscription lapses at its original due date plus grace', async () => {
    const { sub } = await buy()
    patchCheckout(async () => {
      throw new ApiError('upstream_error', 'store refused the invoice')
    })
    h.clock.advance(30 * DAY)
    await h.payments.renewals.tick()
    for (const wait of RENEWAL_BACKOFF_MS.slice(0, 4)) {
      h.clock.advance(wait)
      await h.payments.renewals.tick()
    }
    expect(h.payments.subscriptions.view(sub.id).next_renewal_at).toBeGreaterThan(sub.next_renewal_at)
    h.clock.set(sub.next_renewal_at + 3 * DAY - 1)
    expect((await h.payments.renewals.tick()).lapsed).toBe(0)
    h.clock.advance(1)
    expect((await h.payments.renewals.tick()).lapsed).toBe(1)
  })

  it("lapse follows the tier's current grace, not the grace copied onto the licence at the sale", async () => {
    const { sub } = await buy()
    const policy = h.services.catalog.policyBySlug(h.services.catalog.productBySlug('app')!.id, 'monthly')!
    h.services.catalog.updatePolicy(policy.id, { grace_period_days: 30 })
    h.clock.advance(30 * DAY)
    await h.payments.renewals.tick()
    h.clock.advance(8 * DAY)
    expect((await h.payments.renewals.tick()).lapsed).toBe(0)
    expect(h.payments.subscriptions.view(sub.id).status).toBe('past_due')
    h.clock.advance(22 * DAY - 1)
    expect((await h.payments.renewals.tick()).lapsed).toBe(0)
    h.clock.advance(1)
    expect((await h.payments.renewals.tick()).lapsed).toBe(1)
    // Lowering it takes effect the same way.
    const other = await buy()
    h.services.catalog.updatePolicy(policy.id, { grace_period_days: 1 })
    h.clock.advance(30 * DAY)
    await h.payments.renewals.tick()
    h.clock.advance(1 * DAY)
    await h.payments.renewals.tick()
    expect(h.payments.subscriptions.view(other.sub.id).status).toBe('lapsed')
  })

  it('lapse: past-due past the paid-through date plus grace → lapsed, the licence validates as expired', async () => {
    const { sub, key } = await buy()
    h.clock.advance(30 * DAY)
    await h.payments.renewals.tick()
    h.clock.advance(3 * DAY - 1)
    expect((await h.payments.renewals.tick()).lapsed).toBe(0)
    h.clock.advance(1)
    expect((await h.payments.renewals.tick()).lapsed).toBe(1)
    expect(h.payments.subscriptions.view(sub.id).status).toBe('lapsed')
    expect(events('subscription.lapsed')).toHaveLength(0) // no endpoint subscribed
    expect(h.services.licenses.validation.validate({ key })).toMatchObject({ ok: false, reason: 'expired' })
    // A lapsed subscription is not billed again.
    h.clock.advance(60 * DAY)
    expect((await h.payments.renewals.tick()).claimed).toBe(0)
  })

  it('fiat subscriptions are re-quoted each cycle with the rate audit fields on the invoice', async () => {
    const rates = h.services.rates as unknown as { rate: (c: string) => Promise<{ centibps: number; source: string }> }
    let centibps = 1_000_000_000 // 100,000.0000 USD per BTC
    rates.rate = async () => ({ centibps, source: 'test' })
    const product = h.services.catalog.productBySlug('app')!
    h.services.catalog.createPolicy(
      product.id,
      PolicyInput.parse({
        slug: 'usd-monthly',
        name: 'USD',
        is_recurring: true,
        renewal_period_days: 30,
        price_currency_override: 'USD',
        price_value_override: 1_000,
      }),
    )
    await buy('usd-monthly')
    h.clock.advance(30 * DAY)
    centibps = 500_000_000
    await h.payments.renewals.tick()
    const [inv] = renewalInvoices()
    expect(inv).toMatchObject({
      listed_currency: 'USD',
      exchange_rate_centibps: 500_000_000,
      exchange_rate_source: 'test',
    })
    expect(inv!.amount_sats).toBe(20_000)
  })
})

describe('cancel', () => {
  it('buyer cancel: cancelled, no further charge, licence valid through the cycle, idempotent', async () => {
    downEndpoint()
    const { key, sub } = await buy()
    const subscription_id = sub.id
    expect(h.payments.subscriptions.cancelByKey(key)).toEqual({
      ok: true,
      subscription_id,
      status: 'cancelled',
      already: null,
    })
    expect(h.payments.subscriptions.cancelByKey(key)).toEqual({
      ok: true,
      subscription_id,
      status: 'cancelled',
      already: 'cancelled',
    })
    const view = h.payments.subscriptions.view(sub.id)
    expect(view.cancelled_at).toBe(h.clock.now())
    expect(events('subscription.cancelled').map((e) => e.data.actor)).toEqual(['buyer'])
    h.clock.advance(30 * DAY - 1)
    expect(h.services.licenses.validation.validate({ key })).toMatchObject({ ok: true })
    h.clock.advance(1)
    expect((await h.payments.renewals.tick()).claimed).toBe(0)
    const audits = db().prepare("SELECT actor FROM audit_log WHERE action = 'subscription.cancel'").all()
    expect(audits).toEqual([{ actor: 'buyer' }])
  })

  it('garbage key → 401; a licence without a subscription → 404', async () => {
    expect(() => h.payments.subscriptions.cancelByKey('garbage')).toThrow(
      expect.objectContaining({ status: 401 }) as Error,
    )
    const s = await h.payments.purchases.start({ product: 'app' })
    settle(s.invoice_id)
    const key = h.payments.purchases.poll(s.invoice_id).license_key!
    expect(() => h.payments.subscriptions.cancelByKey(key)).toThrow(expect.objectContaining({ status: 404 }) as Error)
  })

  it('admin cancel, idempotent, with actor admin', async () => {
    downEndpoint()
    const { sub } = await buy()
    expect(h.payments.subscriptions.cancel(sub.id, 'admin', 'refund')).toMatchObject({ already: null })
    expect(h.payments.subscriptions.cancel(sub.id, 'admin', 'refund')).toMatchObject({ already: 'cancelled' })
    expect(events('subscription.cancelled').map((e) => e.data.actor)).toEqual(['admin'])
    expect(() => h.payments.subscriptions.cancel('nope', 'admin', null)).toThrow(
      expect.objectContaining({ status: 404 }) as Error,
    )
  })
})
