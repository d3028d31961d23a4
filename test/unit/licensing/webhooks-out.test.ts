import { createHmac } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { RETRY_BACKOFF_S } from '../../../src-main/licensing/webhooksOut'
import { WebhookEndpointInput, WebhookEndpointPatch, WebhookEndpointQuery } from '../../../src-main/contract/licensing'
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
const listed = () => out().endpoints(WebhookEndpointQuery.parse({}))

describe('outbound webhooks', () => {
  it('signs each delivery over the raw body, with event and delivery id headers; the secret is never listed', async () => {
    const ep = out().createEndpoint(
      WebhookEndpointInput.parse({ url: `${receiver.url}/hook`, secret: SECRET, events: ['license.issued'] }),
    )
    expect(JSON.stringify(listed())).not.toContain(SECRET)
    expect(JSON.stringify(ep)).not.toContain(SECRET)

    out().enqueue('license.issued', { license_id: 'L1' }, h.clock.now())
    out().enqueue('license.revoked', { license_id: 'L1' }, h.clock.now()) // not subscribed
    expect(await out().tick()).toEqual({ attempted: 1, delivered: 1 })

    expect(receiver.requests).toHaveLength(1)
    const req = receiver.requests[0]!
    const expected = `sha256=${createHmac('sha256', SECRET).update(req.body).digest('hex')}`
    expect(req.headers['x-tandem-signature']).toBe(expected)
    expect(req.headers['x-tandem-event']).toBe('license.issued')
    const body = JSON.parse(req.body) as { id: string; event: string; data: { license_id: string } }
    expect(req.headers['x-tandem-delivery']).toBe(body.id)
    expect(body).toMatchObject({ event: 'license.issued', data: { license_id: 'L1' } })
    const log = out().listDeliveries({ limit: 10 })
    expect(log[0]).toMatchObject({ status: 'delivered', attempts: 1, last_status_code: 200 })
    expect(h.logs.lines.join('\n')).not.toContain(SECRET)
  })

  it('retries with backoff on the injected clock, then gives up; the admin can retry', async () => {
    answer = 500
    out().createEndpoint(WebhookEndpointInput.parse({ url: `${receiver.url}/hook`, secret: SECRET }))
    out().enqueue('license.issued', { n: 1 }, h.clock.now())
    for (let i = 0; i < RETRY_BACKOFF_S.length; i++) {
      expect((await out().tick()).attempted).toBe(1)
      const [d] = out().listDeliveries({ limit: 1 })
      expect(d).toMatchObject({ status: 'pending', attempts: i + 1, last_status_code: 500, last_error: 'HTTP 500' })
      expect(d!.next_attempt_at).toBe(h.clock.now() + RETRY_BACKOFF_S[i]! * 1000)
      // Not due yet: nothing is sent.
      h.clock.advance(RETRY_BACKOFF_S[i]! * 1000 - 1)
      expect((await out().tick()).attempted).toBe(0)
      h.clock.advance(1)
    }
    await out().tick()
    const [failed] = out().listDeliveries({ limit: 1 })
    expect(failed).toMatchObject({ status: 'failed', attempts: RETRY_BACKOFF_S.length + 1, next_attempt_at: null })
    expect(receiver.requests).toHaveLength(RETRY_BACKOFF_S.length + 1)

    answer = 204
    out().retry(failed!.id)
    await out().tick()
    expect(out().delivery(failed!.id)).toMatchObject({ status: 'delivered', last_status_code: 204 })
    expect(() => out().retry(failed!.id)).toThrow(/already succeeded/)
  })

  it('an unreachable endpoint is logged as an error and retried', async () => {
    const gone = await new LoopbackServer(() => ({ status: 200 })).start()
    const url = gone.url
    await gone.stop()
    out().createEndpoint(WebhookEndpointInput.parse({ url, secret: SECRET }))
    out().enqueue('license.issued', {}, h.clock.now())
    await out().tick()
    const [d] = out().listDeliveries({ limit: 1 })
    expect(d).toMatchObject({ status: 'pending', attempts: 1, last_status_code: null })
    expect(d!.last_error).toMatch(/refused|ECONNREFUSED/i)
  })

  it('settlement writes license.issued in the same transaction; inactive endpoints get nothing', async () => {
    satProduct(h, 'freebie', 0)
    const a = out().createEndpoint(
      WebhookEndpointInput.parse({ url: `${receiver.url}/a`, secret: SECRET, events: ['license.issued'] }),
    )
    out().createEndpoint(WebhookEndpointInput.parse({ url: `${receiver.url}/b`, secret: SECRET, active: false }))
    const s = await h.payments.purchases.start({ product: 'freebie' })
    expect(s.status).toBe('settled')
    const queued = out().listDeliveries({ limit: 10 })
    expect(queued).toHaveLength(1)
    expect(queued[0]).toMatchObject({ endpoint_id: a.id, event: 'license.issued', status: 'pending' })
    await out().tick()
    const body = JSON.parse(receiver.requests[0]!.body) as { data: { invoice_id: string; license_id: string } }
    expect(receiver.requests[0]!.path).toBe('/a')
    expect(body.data.invoice_id).toBe(s.invoice_id)
    expect(body.data.license_id).toBe(h.payments.purchases.poll(s.invoice_id).license_id)
  })

  it('test deliveries, endpoint updates and deletion', async () => {
    const ep = out().createEndpoint(
      WebhookEndpointInput.parse({ url: `${receiver.url}/a`, secret: SECRET, events: ['license.issued'] }),
    )
    const test = out().sendTest(ep.id)
    expect(test.event).toBe('webhook.test')
    await out().tick()
    expect(receiver.requests.at(-1)!.headers['x-tandem-event']).toBe('webhook.test')
    const upd = out().updateEndpoint(
      WebhookEndpointPatch.parse({ id: ep.id, active: false, secret: 'another-secret-value-xyz' }),
    )
    expect(upd.active).toBe(false)
    expect(JSON.stringify(upd)).not.toContain('another-secret-value-xyz')
    out().deleteEndpoint(ep.id)
    expect(listed()).toEqual({ total: 0, endpoints: [] })
    expect(() => out().deleteEndpoint(ep.id)).toThrow(/no such/)
  })
})
