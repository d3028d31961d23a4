import { createHmac } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  BtcpayProvider,
  mapBtcpayStatus,
  satsToBtcString,
  verifyBtcpaySignature,
} from '../../../src-main/licensing/providers/btcpay'
import { WebhookRejected } from '../../../src-main/licensing/providers/types'
import { mapZapriteStatus, ZapriteProvider } from '../../../src-main/licensing/providers/zaprite'
import { FakeBtcpay } from '../../fakes/btcpay'
import { FakeZaprite } from '../../fakes/zaprite'

let btcpay: FakeBtcpay
let zaprite: FakeZaprite

beforeAll(async () => {
  btcpay = await new FakeBtcpay().start()
  zaprite = await new FakeZaprite().start()
})
afterAll(async () => {
  await Promise.all([btcpay.stop(), zaprite.stop()])
})

const checkout = (id: string) => ({
  localInvoiceId: id,
  amountSats: 123_456,
  listed: { currency: 'SAT' as const, value: 123_456 },
  redirectUrl: 'http://127.0.0.1:9/thank-you?invoice=' + id,
  label: 'App (Pro)',
  buyerEmail: 'b@example.com',
})

function rejection(fn: () => unknown): WebhookRejected {
  try {
    fn()
  } catch (err) {
    if (err instanceof WebhookRejected) return err
    throw err
  }
  throw new Error('expected a WebhookRejected')
}

describe('BTCPay Server', () => {
  const provider = () =>
    new BtcpayProvider({
      baseUrl: btcpay.url,
      storeId: btcpay.storeId,
      apiKey: btcpay.apiKey,
      webhookSecret: btcpay.webhookSecret,
    })

  it('converts sats to the BTC decimal string without floating point', () => {
    expect(satsToBtcString(0)).toBe('0.00000000')
    expect(satsToBtcString(1)).toBe('0.00000001')
    expect(satsToBtcString(123_456_789)).toBe('1.23456789')
    expect(satsToBtcString(2_100_000_000_000_000)).toBe('21000000.00000000')
    expect(() => satsToBtcString(1.5)).toThrow()
  })

  it('maps Greenfield invoice states', () => {
    expect(['New', 'Processing', 'Settled', 'Expired', 'Invalid'].map(mapBtcpayStatus)).toEqual([
      'pending',
      'pending',
      'settled',
      'expired',
      'invalid',
    ])
  })

  it('verifies BTCPay-Sig over the raw body', () => {
    const body = Buffer.from('{"type":"InvoiceSettled","invoiceId":"X"}')
    const good = `sha256=${createHmac('sha256', 'secret-123').update(body).digest('hex')}`
    expect(verifyBtcpaySignature('secret-123', body, good)).toBe(true)
    expect(verifyBtcpaySignature('secret-123', body, good.toUpperCase().replace('SHA256=', 'sha256='))).toBe(true)
    expect(verifyBtcpaySignature('secret-124', body, good)).toBe(false)
    expect(verifyBtcpaySignature('secret-123', Buffer.concat([body, Buffer.from(' ')]), good)).toBe(false)
    expect(verifyBtcpaySignature('secret-123', body, undefined)).toBe(false)
    expect(verifyBtcpaySignature('secret-123', body, good.slice(0, -2))).toBe(false)
    expect(verifyBtcpaySignature('secret-123', body, good.replace('sha256=', 'sha1='))).toBe(false)
  })

  it('creates and fetches an invoice with `Authorization: token`', async () => {
    const created = await provider().createCheckout(checkout('local-1'))
    expect(created.checkoutUrl).toBe(`${btcpay.url}/i/${created.providerInvoiceId}`)
    const req = btcpay.requests.at(-1)!
    expect(req.headers.authorization).toBe(`token ${btcpay.apiKey}`)
    expect(JSON.parse(req.body)).toMatchObject({
      amount: '0.00123456',
      currency: 'BTC',
      metadata: { orderId: 'local-1', buyerEmail: 'b@example.com' },
      checkout: { redirectURL: 'http://127.0.0.1:9/thank-you?invoice=local-1', redirectAutomatically: true },
    })
    btcpay.setStatus(created.providerInvoiceId, 'Processing')
    expect(await provider().getInvoice(created.providerInvoiceId)).toMatchObject({
      status: 'pending',
      providerStatus: 'Processing',
      localInvoiceId: 'local-1',
      amount: { currency: 'BTC', value: 123_456 },
      storeId: btcpay.storeId,
    })
  })

  it('refused credentials and unknown invoices are upstream errors', async () => {
    const bad = new BtcpayProvider({
      baseUrl: btcpay.url,
      storeId: btcpay.storeId,
      apiKey: 'nope-nope-nope',
      webhookSecret: 'x'.repeat(16),
    })
    await expect(bad.verifyCredentials()).rejects.toMatchObject({ code: 'upstream_refused', status: 502 })
    await expect(provider().verifyCredentials()).resolves.toBeUndefined()
    await expect(provider().getInvoice('Missing123')).rejects.toMatchObject({ code: 'upstream_not_found' })
    await expect(provider().getInvoice('../../etc')).rejects.toThrow()
  })

  it('parses signed events and rejects the rest', () => {
    const p = provider()
    const body = (o: unknown) => Buffer.from(JSON.stringify(o))
    const sign = (b: Buffer) => ({ 'btcpay-sig': btcpay.sign(b.toString()) })
    const settled = body({ type: 'InvoiceSettled', invoiceId: 'Abc1', storeId: btcpay.storeId })
    expect(p.parseWebhook(sign(settled), settled)).toEqual({
      providerInvoiceId: 'Abc1',
      claimed: 'settled',
      eventType: 'InvoiceSettled',
    })
    const processing = body({ type: 'InvoicePaymentSettled', invoiceId: 'Abc1' })
    expect(p.parseWebhook(sign(processing), processing).claimed).toBe('processing')
    const other = body({ type: 'InvoiceCreated', invoiceId: 'Abc1' })
    expect(p.parseWebhook(sign(other), other).claimed).toBe('ignored')

    expect(rejection(() => p.parseWebhook({}, settled)).status).toBe(401)
    expect(rejection(() => p.parseWebhook({ 'btcpay-sig': 'sha256=' + '0'.repeat(64) }, settled)).status).toBe(401)
    const notJson = Buffer.from('not json')
    expect(rejection(() => p.parseWebhook(sign(notJson), notJson)).status).toBe(400)
    const noInvoice = body({ type: 'InvoiceSettled' })
    expect(rejection(() => p.parseWebhook(sign(noInvoice), noInvoice)).status).toBe(400)
    const otherStore = body({ type: 'InvoiceSettled', invoiceId: 'Abc1', storeId: 'AnotherStore' })
    expect(rejection(() => p.parseWebhook(sign(otherStore), otherStore)).status).toBe(400)
  })
})

describe('Zaprite', () => {
  const provider = () => new ZapriteProvider({ baseUrl: zaprite.url, apiKey: zaprite.apiKey })

  it('maps order states: PAID, COMPLETE and OVERPAID settle; PENDING, PROCESSING, UNDERPAID wait', () => {
    expect(['PAID', 'COMPLETE', 'OVERPAID'].map(mapZapriteStatus)).toEqual(['settled', 'settled', 'settled'])
    expect(['PENDING', 'PROCESSING', 'UNDERPAID', 'SOMETHING_NEW'].map(mapZapriteStatus)).toEqual([
      'pending',
      'pending',
      'pending',
      'pending',
    ])
  })

  it('creates orders with externalUniqId and the smallest unit; fiat in cents, sats as BTC', async () => {
    const sats = await provider().createCheckout(checkout('local-sat'))
    expect(zaprite.orders.get(sats.providerInvoiceId)).toMatchObject({
      amount: 123_456,
      currency: 'BTC',
      externalUniqId: 'local-sat',
    })
    const usd = await provider().createCheckout({ ...checkout('local-usd'), listed: { currency: 'USD', value: 2_500 } })
    expect(zaprite.orders.get(usd.providerInvoiceId)).toMatchObject({
      amount: 2_500,
      currency: 'USD',
      externalUniqId: 'local-usd',
    })
    expect(zaprite.requests.at(-1)!.headers.authorization).toBe(`Bearer ${zaprite.apiKey}`)
    zaprite.setStatus(usd.providerInvoiceId, 'OVERPAID')
    expect(await provider().getInvoice(usd.providerInvoiceId)).toMatchObject({
      status: 'settled',
      providerStatus: 'OVERPAID',
      localInvoiceId: 'local-usd',
      amount: { currency: 'USD', value: 2500 },
      paidVerdict: 'over',
    })
  })

  it('validates a key by listing orders', async () => {
    await expect(provider().verifyCredentials()).resolves.toBeUndefined()
    await expect(
      new ZapriteProvider({ baseUrl: zaprite.url, apiKey: 'refused-key-1' }).verifyCredentials(),
    ).rejects.toMatchObject({
      code: 'upstream_refused',
    })
    expect(zaprite.requests.at(-1)!.path).toBe('/v1/orders?limit=1')
  })

  it('extracts the order id from webhook shapes and rejects malformed ones', () => {
    const p = provider()
    const parse = (s: string) => p.parseWebhook({}, Buffer.from(s))
    expect(parse(JSON.stringify({ event: 'order.change', data: { id: 'od_1', status: 'PAID' } }))).toEqual({
      providerInvoiceId: 'od_1',
      claimed: 'settled',
      eventType: 'order.change',
    })
    expect(parse(JSON.stringify({ eventType: 'order.expired', data: { object: { id: 'od_2' } } })).claimed).toBe(
      'expired',
    )
    expect(parse(JSON.stringify({ orderId: 'od_3' })).providerInvoiceId).toBe('od_3')
    expect(rejection(() => parse('{"event":')).status).toBe(400)
    expect(rejection(() => parse('null')).status).toBe(400)
    expect(rejection(() => parse('"od_1"')).status).toBe(400)
    expect(rejection(() => parse(JSON.stringify({ event: 'order.change', data: { status: 'PAID' } }))).status).toBe(400)
    expect(rejection(() => parse(JSON.stringify({ data: { id: '../etc/passwd' } }))).status).toBe(400)
    expect(rejection(() => parse(JSON.stringify({ data: { id: 42 } }))).status).toBe(400)
  })
})
