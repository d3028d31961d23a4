import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'

const DAY = 86_400_000
const clock = new ManualClock(Date.UTC(2026, 0, 1))
let d: TestDaemon

const post = async (path: string, body: unknown) => {
  const res = await fetch(d.url + path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}
const admin = async (path: string, method = 'GET', body?: unknown) => {
  const res = await d.admin(path, {
    method,
    headers: { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

/** A zero-priced trial tier issues at once without a provider; returns the signed key. */
async function buyTrial(): Promise<string> {
  const started = await post('/v1/purchase', { product: 'notes', policy: 'trial' })
  expect(started).toMatchObject({ status: 200, body: { status: 'settled' } })
  const poll = await fetch(`${d.url}/v1/purchase/${started.body.invoice_id as string}`)
  return ((await poll.json()) as { license_key: string }).license_key
}

beforeAll(async () => {
  d = await startDaemon({ clock })
  const product = await admin('/v1/admin/products', 'POST', { slug: 'notes', name: 'Notes', price_value: 0 })
  const id = product.body.id as string
  const trial = await admin(`/v1/admin/products/${id}/policies`, 'POST', {
    slug: 'trial',
    name: 'Trial',
    is_recurring: true,
    renewal_period_days: 30,
    trial_days: 7,
    grace_period_days: 2,
  })
  expect(trial.status).toBe(200)
  const paidTrial = await admin(`/v1/admin/products/${id}/policies`, 'POST', {
    slug: 'pro-trial',
    name: 'Pro with a trial',
    is_recurring: true,
    renewal_period_days: 30,
    trial_days: 7,
    price_value_override: 2_500,
  })
  expect(paidTrial.status).toBe(200)
})
afterAll(async () => {
  await d?.stop()
})

describe('subscriptions over HTTP', () => {
  it('validate shows the trial end as expires_at', async () => {
    const key = await buyTrial()
    const v = await post('/v1/validate', { key })
    expect(v.body).toMatchObject({
      ok: true,
      is_trial: true,
      expires_at: new Date(clock.now() + 7 * DAY).toISOString(),
    })
  })

  it('a priced tier with trial days: the key comes inline, nothing is charged, no provider is needed', async () => {
    const started = await post('/v1/purchase', {
      product: 'notes',
      policy_slug: 'pro-trial',
      buyer_email: 'a@b.example',
    })
    expect(started).toMatchObject({
      status: 200,
      body: { status: 'settled', amount_sats: 0, base_price_sats: 2_500, discount_applied_sats: 0 },
    })
    const key = started.body.license_key as string
    expect(key).toMatch(/^LIC1-/)
    const trialEnd = clock.now() + 7 * DAY
    expect((await post('/v1/validate', { key })).body).toMatchObject({
      ok: true,
      is_trial: true,
      expires_at: new Date(trialEnd).toISOString(),
    })
    const list = await admin('/v1/admin/subscriptions?limit=100')
    const subs = list.body.subscriptions as { license_id: string }[]
    expect(subs.find((s) => s.license_id === started.body.license_id)).toMatchObject({
      status: 'active',
      listed_value: 2_500,
      next_renewal_at: trialEnd,
      due_at: trialEnd,
    })
  })

  it('buyer cancel: cancelled, idempotent, `key` accepted as an alias; garbage 401', async () => {
    const key = await buyTrial()
    const first = await post('/v1/subscriptions/cancel', { license_key: key })
    const subscription_id = first.body.subscription_id
    expect(subscription_id).toEqual(expect.any(String))
    expect(first).toEqual({ status: 200, body: { ok: true, subscription_id, status: 'cancelled', already: null } })
    expect(await post('/v1/subscriptions/cancel', { key })).toEqual({
      status: 200,
      body: { ok: true, subscription_id, status: 'cancelled', already: 'cancelled' },
    })
    expect((await post('/v1/subscriptions/cancel', { license_key: 'garbage' })).status).toBe(401)
  })

  it('a licence without a subscription → 404', async () => {
    const product = await admin('/v1/admin/products', 'POST', { slug: 'free', name: 'Free', price_value: 0 })
    expect(product.status).toBe(200)
    const started = await post('/v1/purchase', { product: 'free' })
    const poll = await fetch(`${d.url}/v1/purchase/${started.body.invoice_id as string}`)
    const key = ((await poll.json()) as { license_key: string }).license_key
    const none = await post('/v1/subscriptions/cancel', { license_key: key })
    expect(none.status).toBe(404)
    expect(JSON.stringify(none.body)).toContain('no subscription')
  })

  it('admin: the list with cycles and their invoice status, then cancel', async () => {
    await buyTrial()
    const list = await admin('/v1/admin/subscriptions?status=active')
    expect(list.status).toBe(200)
    const subs = list.body.subscriptions as { id: string; status: string; cycles: { status: string }[] }[]
    expect(subs.length).toBeGreaterThan(0)
    expect(subs[0]).toMatchObject({ status: 'active', cycles: [{ cycle_number: 1, status: 'settled' }] })
    const cancelled = await admin(`/v1/admin/subscriptions/${subs[0]!.id}/cancel`, 'POST', { reason: 'refund' })
    expect(cancelled).toMatchObject({ status: 200, body: { id: subs[0]!.id, status: 'cancelled' } })
    const audit = await admin('/v1/admin/audit?limit=20')
    expect(JSON.stringify(audit.body)).toContain('subscription.cancel')
  })
})
