import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ConsumerKeys } from '../../../src-main/gateway/keys/consumerKeyStore'
import { licenseAccessKeys } from '../../../src-main/gateway/keys/licenseAccessKeys'
import { splitSats } from '../../../src-main/licensing/accessReport'
import { ManualClock } from '../../../src-main/lib/clock'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { paymentsHarness, satProduct, tierOn, type Harness } from './payments-harness'

/** The operator's view of the access licenses (issue 45): per license and in total, this period. */
const DAY = 86_400_000
const A = 'sim/model-a'
const B = 'sim/model-b'
const access = (tokens: number | null, audioMinutes: number | null = null) => ({
  models: null,
  tokens_per_period: tokens,
  requests_per_minute: null,
  concurrent_streams: null,
  top_up: null,
  audio_minutes_per_period: audioMinutes,
})
let h: Harness
let keys: ConsumerKeys
let gatewayDir: string
let productId: string
let quotaTier: string
let openTier: string
/** The product's first tier: it sells no access. */
let plainTier: string

beforeEach(() => {
  gatewayDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-gw-'))
  keys = ConsumerKeys.open(gatewayDir, new ManualClock(), createLogger({ sink: new MemorySink() }))
  h = paymentsHarness({ accessKeys: licenseAccessKeys(keys) })
  const cluster = satProduct(h, 'cluster')
  productId = cluster.productId
  plainTier = cluster.policyId
  quotaTier = tierOn(h, productId, { slug: 'api', rank: 1, price: 1000 }, { access: access(1000) })
  openTier = tierOn(h, productId, { slug: 'open', rank: 2, price: 5000 }, { access: access(null) })
})

afterEach(async () => {
  keys.close()
  await h.close()
  fs.rmSync(gatewayDir, { recursive: true, force: true })
})

function issue(policyId: string, email: string): string {
  return h.services.licenses.issuing.issueComplimentary({ productId, policyId, buyerEmail: email }).license.id
}

/** `tokens` (all completion) counted on the license's key under `model`, in its current period. */
function use(licenseId: string, model: string, tokens: number, requests = 1, audioSeconds = 0): void {
  const key = keys.forLicense(licenseId)!
  const start = Date.parse(h.services.licenses.quotas.quota(licenseId)!.period_start)
  keys.licenses.periods!.add(key.id, start, model, {
    requests,
    prompt_tokens: 0,
    completion_tokens: tokens,
    audio_seconds: audioSeconds,
  })
}

/** A settled invoice of `sats` at `settledAt`, bought as a top-up of `licenseId` (paid for its period). */
function paidTopUp(licenseId: string, sats: number, settledAt: number, tokens = 100): void {
  const db = h.services.db
  const id = `inv-${licenseId}-${settledAt}`
  db.prepare(
    `INSERT INTO invoices (id, kind, product_id, amount_sats, status, created_at, updated_at, settled_at)
     VALUES (?, 'purchase', ?, ?, 'settled', ?, ?, ?)`,
  ).run(id, productId, sats, settledAt, settledAt, settledAt)
  db.prepare(
    `INSERT INTO access_top_ups (id, license_id, tokens, source, invoice_id, created_at) VALUES (?, ?, ?, 'paid', ?, ?)`,
  ).run(`t-${id}`, licenseId, tokens, id, settledAt)
}

describe('the access report', () => {
  it('adds up quotas and top-ups as sold, usage on two models as used, and splits revenue by tokens', () => {
    const heavy = issue(quotaTier, 'heavy@example.com')
    const light = issue(quotaTier, 'light@example.com')
    const open = issue(openTier, 'open@example.com')
    use(heavy, A, 300, 3)
    use(heavy, B, 100)
    use(light, A, 50)
    h.services.licenses.quotas.addTopUp({ licenseId: light, tokens: 500, source: 'admin' })
    // Paid for this period: 1000 sats split 3:1 over heavy's two models; open paid 70 and used nothing.
    paidTopUp(heavy, 1000, h.clock.now())
    paidTopUp(open, 70, h.clock.now())
    // A payment settled before the period began is not this period's revenue.
    paidTopUp(light, 9999, h.clock.now() - 40 * DAY)

    const r = h.services.licenses.report.report({ limit: 50, offset: 0 })
    expect(r.total).toBe(3)
    expect(r.licenses.map((l) => l.license_id)).toEqual([heavy, light, open])
    const [first, second, third] = r.licenses
    expect(first).toMatchObject({
      product_slug: 'cluster',
      tier_slug: 'api',
      buyer_email: 'heavy@example.com',
      tokens_allowed: 1100,
      top_up_tokens: 100,
      tokens_used: 400,
      tokens_remaining: 700,
      revenue_sats: 1000,
    })
    expect(second).toMatchObject({ tokens_allowed: 1500, top_up_tokens: 500, tokens_used: 50, revenue_sats: 0 })
    expect(third).toMatchObject({ tier_slug: 'open', tokens_allowed: null, tokens_remaining: null, tokens_used: 0 })
    expect(first!.resets_at).toBeGreaterThan(h.clock.now())
    // heavy 1000 + 100 bought, light 1000 + 500 granted (its older top-up is another period's); open has no quota.
    expect(r.totals).toEqual({
      licenses: 3,
      unlimited_licenses: 1,
      tokens_sold: 2600,
      tokens_used: 450,
      audio_seconds_sold: 0,
      audio_seconds_used: 0,
      revenue_sats: 1070,
    })
    expect(r.revenue).toEqual([
      { model: A, tokens: 350, requests: 4, revenue_sats: 750 },
      { model: B, tokens: 100, requests: 1, revenue_sats: 250 },
      { model: null, tokens: 0, requests: 0, revenue_sats: 70 },
    ])
    expect(r.top_consumers.map((l) => l.buyer_email)).toEqual(['heavy@example.com', 'light@example.com'])
  })

  it('leaves out revoked licenses and licenses whose tier sells no access, and pages the rest', () => {
    const kept = issue(quotaTier, 'kept@example.com')
    const gone = issue(quotaTier, 'gone@example.com')
    issue(plainTier, 'desktop@example.com')
    use(kept, A, 10)
    use(gone, A, 900)
    h.services.licenses.status.revoke(gone, 'refunded')
    const r = h.services.licenses.report.report({ limit: 50, offset: 0 })
    expect(r.licenses.map((l) => l.license_id)).toEqual([kept])
    expect(r.totals.tokens_used).toBe(10)
    expect(r.totals.tokens_sold).toBe(1000)

    const extra = issue(quotaTier, 'extra@example.com')
    use(extra, B, 20)
    const page2 = h.services.licenses.report.report({ limit: 1, offset: 1 })
    expect(page2.total).toBe(2)
    expect(page2.licenses.map((l) => l.license_id)).toEqual([kept])
    expect(page2.top_consumers.map((l) => l.license_id)).toEqual([extra, kept])
  })

  it('counts usage already written to the database and usage still pending alike, per tier', () => {
    const a = issue(quotaTier, 'a@example.com')
    const b = issue(openTier, 'b@example.com')
    use(a, A, 40)
    keys.licenses.periods!.write()
    use(a, A, 2)
    use(b, B, 7)
    const totals = { revenue_sats: 0, audio_seconds_sold: 0, audio_seconds_used: 0 }
    expect(h.services.licenses.report.byTier()).toEqual([
      { product: 'cluster', tier: 'api', licenses: 1, tokens_sold: 1000, tokens_used: 42, ...totals },
      { product: 'cluster', tier: 'open', licenses: 1, tokens_sold: 0, tokens_used: 7, ...totals },
    ])
  })

  it("counts a license's audio seconds against its tier's audio minutes, written and pending", () => {
    const audioTier = tierOn(h, productId, { slug: 'voice', rank: 3, price: 800 }, { access: access(null, 2) })
    const v = issue(audioTier, 'v@example.com')
    use(v, 'asr', 0, 1, 45.5)
    keys.licenses.periods!.write()
    use(v, 'Multivoice.EN-US.Aria', 0, 1, 3.25)
    const row = h.services.licenses.report.licenses().find((l) => l.license_id === v)!
    expect(row).toMatchObject({ audio_seconds_allowed: 120, audio_seconds_used: 48.75, tokens_allowed: null })
    expect(h.services.licenses.report.byTier().find((t) => t.tier === 'voice')).toMatchObject({
      audio_seconds_sold: 120,
      audio_seconds_used: 48.75,
    })
    expect(h.services.licenses.quotas.quota(v)).toMatchObject({
      audio_minutes_per_period: 2,
      audio_seconds_used: 48.75,
      audio_seconds_remaining: 71.25,
    })
  })
})

/** `licenseId` on a subscription whose cycle ends at `dueAt`, with a settled invoice of `sats` per listed cycle. */
function subscribed(licenseId: string, dueAt: number, cycles: { sats: number; settled: boolean }[]): void {
  const db = h.services.db
  const at = h.clock.now()
  db.prepare(
    `INSERT INTO subscriptions (id, license_id, policy_id, status, listed_currency, listed_value, period_days,
       next_renewal_at, due_at, created_at, updated_at)
     VALUES (?, ?, ?, 'active', 'SAT', 1000, 30, ?, ?, ?, ?)`,
  ).run(`sub-${licenseId}`, licenseId, quotaTier, dueAt, dueAt, at, at)
  cycles.forEach((c, i) => {
    const id = `inv-${licenseId}-cycle-${i + 1}`
    db.prepare(
      `INSERT INTO invoices (id, kind, product_id, amount_sats, status, created_at, updated_at, settled_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      id,
      i === 0 ? 'purchase' : 'renewal',
      productId,
      c.sats,
      c.settled ? 'settled' : 'pending',
      at,
      at,
      c.settled ? at : null,
    )
    db.prepare(
      'INSERT INTO subscription_invoices (subscription_id, invoice_id, cycle_number, created_at) VALUES (?, ?, ?, ?)',
    ).run(`sub-${licenseId}`, id, i + 1, at)
    if (i === 0) db.prepare('UPDATE licenses SET invoice_id = ? WHERE id = ?').run(id, licenseId)
  })
}

describe("a subscription's period", () => {
  it('earns its newest settled cycle invoice once (not the first purchase again, not an unpaid renewal)', () => {
    const sub = issue(quotaTier, 'sub@example.com')
    subscribed(sub, h.clock.now() + 10 * DAY, [
      { sats: 1000, settled: true },
      { sats: 800, settled: true },
      { sats: 900, settled: false },
    ])
    use(sub, A, 30)
    use(sub, B, 10)
    const r = h.services.licenses.report.report({ limit: 50, offset: 0 })
    expect(r.licenses[0]).toMatchObject({ license_id: sub, revenue_sats: 800, resets_at: h.clock.now() + 10 * DAY })
    expect(r.revenue.map((m) => [m.model, m.revenue_sats])).toEqual([
      [A, 600],
      [B, 200],
    ])
  })
})

describe('splitting sats over models', () => {
  it('keeps whole sats that add up to the amount, the remainder to the largest fractions', () => {
    expect(splitSats(100, [1, 1, 1])).toEqual([34, 33, 33])
    expect(splitSats(10, [3, 1])).toEqual([8, 2])
    expect(splitSats(5, [0, 0])).toEqual([0, 0])
    expect(splitSats(0, [4, 2])).toEqual([0, 0])
  })
})
