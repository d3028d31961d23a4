import { createHmac } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { DiscountInput, WebhookEndpointInput, WebhookEventName } from '../../../src-main/contract/licensing'
import { emitEvent } from '../../../src-main/licensing/outboundEvents'
import { RETRY_BACKOFF_S } from '../../../src-main/licensing/webhooksOut'
import { LoopbackServer } from '../../fakes/loopback'
import { paymentsHarness, satProduct, type Harness } from './payments-harness'

let h: Harness
let receiver: LoopbackServer
let answer = 200
const SECRET = 'receiver-shared-secret-123'

beforeEach(async () => {
  answer = 200
  receiver = await new LoopbackServer(() => ({ status: answer, body: { ok: true } })).start()
  h = paymentsHarness()
})

afterEach(async () => {
  await h.close()
  await receiver.stop()
})

const out = () => h.payments.outbox
const lic = () => h.services.licenses

interface Envelope {
  id: string
  event: string
  created_at: string
  data: Record<string, unknown>
}

function endpoint(path: string, events: string[] = ['*']) {
  return out().createEndpoint(WebhookEndpointInput.parse({ url: `${receiver.url}${path}`, secret: SECRET, events }))
}

/** Delivers everything queued and returns what the receiver got at `path`, in order. */
async function drain(path = '/all'): Promise<Envelope[]> {
  while ((await out().tick()).attempted > 0) {
    /* keep posting until the queue is empty */
  }
  return receiver.requests
    .filter((r) => r.path === path)
    .map((r) => {
      expect(r.headers['x-tandem-signature']).toBe(
        `sha256=${createHmac('sha256', SECRET).update(r.body).digest('hex')}`,
      )
      const body = JSON.parse(r.body) as Envelope
      expect(r.headers['x-tandem-event']).toBe(body.event)
      return body
    })
}

function comp(slug = 'app') {
  const { productId, policyId } = satProduct(h, slug)
  return { ...lic().issuing.issueComplimentary({ productId, buyerEmail: 'a@example.com' }), productId, policyId }
}

describe('outbound events', () => {
  it('an admin comp announces license.issued with source complimentary', async () => {
    endpoint('/all')
    const c = comp()
    const [e] = await drain()
    expect(e).toMatchObject({
      event: 'license.issued',
      data: {
        license_id: c.license.id,
        product_id: c.productId,
        policy_id: c.policyId,
        source: 'complimentary',
        invoice_id: null,
        amount_sats: 0,
        buyer_email: 'a@example.com',
        expires_at: null,
      },
    })
  })

  it('a paid (zero-amount) purchase announces license.issued with source purchase', async () => {
    satProduct(h, 'freebie', 0)
    endpoint('/all')
    const s = await h.payments.purchases.start({ product: 'freebie' })
    const events = await drain()
    expect(events.map((e) => e.event)).toEqual(['license.issued'])
    expect(events[0]!.data).toMatchObject({ source: 'purchase', invoice_id: s.invoice_id, amount_sats: 0 })
  })

  it('a free-licence redemption announces license.issued (source redeem) and code.redeemed', async () => {
    satProduct(h, 'app')
    const code = h.services.discounts.create(DiscountInput.parse({ code: 'FREE-1', kind: 'free_license' }))
    endpoint('/all')
    const r = lic().redemption.redeem({ product: 'app', code: 'FREE-1', buyerEmail: 'b@example.com' })
    const events = await drain()
    expect(events.map((e) => e.event).sort()).toEqual(['code.redeemed', 'license.issued'])
    expect(events.find((e) => e.event === 'license.issued')!.data).toMatchObject({
      license_id: r.license_id,
      source: 'redeem',
      invoice_id: r.invoice_id,
    })
    expect(events.find((e) => e.event === 'code.redeemed')!.data).toEqual({
      redemption_id: r.redemption_id,
      code_id: code.id,
      code: 'FREE-1',
      kind: 'free_license',
      invoice_id: r.invoice_id,
      license_id: r.license_id,
      buyer_email: 'b@example.com',
    })
  })

  it('a discount confirmed at settlement announces code.redeemed', async () => {
    satProduct(h, 'app')
    h.services.discounts.create(DiscountInput.parse({ code: 'ALL-OFF', kind: 'percent', value: 100 }))
    endpoint('/codes', ['code.redeemed'])
    const s = await h.payments.purchases.start({ product: 'app', code: 'ALL-OFF' })
    expect(s.status).toBe('settled')
    const events = await drain('/codes')
    expect(events).toHaveLength(1)
    expect(events[0]!.data).toMatchObject({
      code: 'ALL-OFF',
      kind: 'percent',
      invoice_id: s.invoice_id,
      license_id: h.payments.purchases.poll(s.invoice_id).license_id,
    })
  })

  it('suspend, reinstate and revoke each announce their event with the status change', async () => {
    const c = comp()
    endpoint('/all', ['license.suspended', 'license.reinstated', 'license.revoked'])
    lic().status.suspend(c.license.id, 'chargeback')
    lic().status.reinstate(c.license.id)
    lic().status.revoke(c.license.id, 'fraud')
    const events = await drain()
    expect(events.map((e) => [e.event, e.data])).toEqual([
      [
        'license.suspended',
        {
          license_id: c.license.id,
          product_id: c.productId,
          from_status: 'active',
          status: 'suspended',
          reason: 'chargeback',
          actor: 'admin',
        },
      ],
      [
        'license.reinstated',
        {
          license_id: c.license.id,
          product_id: c.productId,
          from_status: 'suspended',
          status: 'active',
          reason: null,
          actor: 'admin',
        },
      ],
      [
        'license.revoked',
        {
          license_id: c.license.id,
          product_id: c.productId,
          from_status: 'active',
          status: 'revoked',
          reason: 'fraud',
          actor: 'admin',
        },
      ],
    ])
  })

  it('machine activation announces machine.activated once; deactivation announces machine.deactivated', async () => {
    const c = comp()
    endpoint('/all', ['machine.activated', 'machine.deactivated'])
    const a = lic().machines.activate({ key: c.license_key, fingerprint: 'fp-1', hostname: 'box', platform: 'linux' })
    expect(a.ok).toBe(true)
    lic().machines.heartbeat({ key: c.license_key, fingerprint: 'fp-1' }) // a heartbeat is not an activation
    lic().machines.deactivate({ key: c.license_key, fingerprint: 'fp-1' })
    const events = await drain()
    expect(events.map((e) => [e.event, e.data])).toEqual([
      ['machine.activated', { machine_id: a.machine_id, license_id: c.license.id, hostname: 'box', platform: 'linux' }],
      [
        'machine.deactivated',
        { machine_id: a.machine_id, license_id: c.license.id, reason: 'client_requested', actor: 'buyer' },
      ],
    ])
  })

  it('an endpoint subscribed to a subset gets only those; unknown event names are refused', async () => {
    endpoint('/all')
    endpoint('/revocations', ['license.revoked'])
    const c = comp()
    lic().status.revoke(c.license.id)
    expect((await drain('/revocations')).map((e) => e.event)).toEqual(['license.revoked'])
    expect((await drain('/all')).map((e) => e.event)).toEqual(['license.issued', 'license.revoked'])
    expect(
      WebhookEndpointInput.safeParse({ url: receiver.url, secret: SECRET, events: ['license.exploded'] }).success,
    ).toBe(false)
    for (const name of [...WebhookEventName.options, '*'])
      expect(WebhookEndpointInput.safeParse({ url: receiver.url, secret: SECRET, events: [name] }).success).toBe(true)
  })

  it('a typed event from another service goes through the same outbox and filter', async () => {
    endpoint('/subs', ['subscription.lapsed'])
    const now = h.clock.now()
    const lapsed = { subscription_id: 'S1', license_id: 'L1', expired_at: null, grace_period_days: 7 }
    emitEvent(out(), 'subscription.lapsed', lapsed, now)
    const at = new Date(now).toISOString()
    const renewed = { subscription_id: 'S1', license_id: 'L1', invoice_id: 'I2', cycle_number: 2, status: 'active' }
    emitEvent(out(), 'subscription.renewed', { ...renewed, expires_at: at, next_renewal_at: at }, now)
    expect((await drain('/subs')).map((e) => [e.event, e.data])).toEqual([['subscription.lapsed', lapsed]])
  })

  it('an endpoint that is down never blocks the change; it is retried, then marked failed, and redeliverable', async () => {
    answer = 503
    endpoint('/all', ['license.revoked'])
    const c = comp()
    expect(lic().status.revoke(c.license.id).status).toBe('revoked')
    for (let i = 0; i <= RETRY_BACKOFF_S.length; i++) {
      expect((await out().tick()).attempted).toBe(1)
      h.clock.advance((RETRY_BACKOFF_S[i] ?? 0) * 1000)
    }
    const [d] = out().listDeliveries({ limit: 5 })
    expect(d).toMatchObject({ event: 'license.revoked', status: 'failed', attempts: RETRY_BACKOFF_S.length + 1 })
    answer = 200
    out().retry(d!.id)
    await out().tick()
    expect(out().delivery(d!.id)).toMatchObject({ status: 'delivered', attempts: RETRY_BACKOFF_S.length + 2 })
  })

  it('a change whose transaction rolls back announces nothing', async () => {
    const c = comp()
    endpoint('/all')
    expect(() =>
      h.services.db.transaction(() => {
        lic().status.suspend(c.license.id, 'will not commit')
        throw new Error('later step failed')
      })(),
    ).toThrow('later step failed')
    expect(lic().lookup.detail(c.license.id).license.status).toBe('active')
    expect(out().listDeliveries({ limit: 10 })).toEqual([])
    lic().status.suspend(c.license.id, 'commits') // the same change, committed, is announced
    expect(
      out()
        .listDeliveries({ limit: 10 })
        .map((d) => d.event),
    ).toEqual(['license.suspended'])
  })
})
