import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { FakeBtcpay } from '../../fakes/btcpay'
import { FakeZaprite } from '../../fakes/zaprite'
import { paymentsHarness, satProduct, type Harness } from './payments-harness'

let h: Harness
let btcpay: FakeBtcpay
let zaprite: FakeZaprite
const HOUR = 3600 * 1000

beforeEach(async () => {
  btcpay = await new FakeBtcpay().start()
  zaprite = await new FakeZaprite().start()
  h = paymentsHarness()
  satProduct(h)
})

afterEach(async () => {
  await h.close()
  await Promise.all([btcpay.stop(), zaprite.stop()])
})

const connectBtcpay = () =>
  h.payments.providers.connectBtcpay({
    baseUrl: btcpay.url,
    storeId: btcpay.storeId,
    apiKey: btcpay.apiKey,
    webhookSecret: btcpay.webhookSecret,
  })

describe('reconciliation', () => {
  it('a payment whose webhook never arrived still issues the license', async () => {
    await connectBtcpay()
    const s = await h.payments.purchases.start({ product: 'app' })
    btcpay.setStatus(s.provider_invoice_id!, 'Settled') // paid, no webhook sent
    expect(h.payments.purchases.poll(s.invoice_id).status).toBe('pending')
    const report = await h.payments.reconciler.tick()
    expect(report).toMatchObject({ checked: 1, settled: 1 })
    const p = h.payments.purchases.poll(s.invoice_id)
    expect(p.status).toBe('settled')
    expect(p.license_key).toMatch(/^LIC1-/)
    expect((await h.payments.reconciler.tick()).checked).toBe(0)
  })

  it('Zaprite: PAID settles, UNDERPAID keeps waiting', async () => {
    await h.payments.providers.connectZaprite({ apiKey: zaprite.apiKey, baseUrl: zaprite.url })
    const a = await h.payments.purchases.start({ product: 'app' })
    const b = await h.payments.purchases.start({ product: 'app' })
    zaprite.setStatus(a.provider_invoice_id!, 'COMPLETE')
    zaprite.setStatus(b.provider_invoice_id!, 'UNDERPAID')
    const report = await h.payments.reconciler.tick()
    expect(report).toMatchObject({ checked: 2, settled: 1 })
    expect(h.payments.purchases.poll(a.invoice_id).status).toBe('settled')
    expect(h.payments.purchases.poll(b.invoice_id).status).toBe('pending')
  })

  it('stale invoices expire; a late payment still settles on recheck', async () => {
    await connectBtcpay()
    const s = await h.payments.purchases.start({ product: 'app' })
    h.clock.advance(23 * HOUR)
    expect((await h.payments.reconciler.tick()).expired).toBe(0)
    h.clock.advance(2 * HOUR)
    expect((await h.payments.reconciler.tick()).expired).toBe(1)
    expect(h.payments.purchases.poll(s.invoice_id).status).toBe('expired')

    btcpay.setStatus(s.provider_invoice_id!, 'Settled')
    expect(await h.payments.reconciler.recheck(s.invoice_id)).toBe('settled')
    expect(h.payments.purchases.poll(s.invoice_id).license_key).toMatch(/^LIC1-/)
  })

  it('the provider saying Expired or Invalid closes the invoice', async () => {
    await connectBtcpay()
    const a = await h.payments.purchases.start({ product: 'app' })
    const b = await h.payments.purchases.start({ product: 'app' })
    btcpay.setStatus(a.provider_invoice_id!, 'Expired')
    btcpay.setStatus(b.provider_invoice_id!, 'Invalid')
    expect(await h.payments.reconciler.tick()).toMatchObject({ expired: 1, invalid: 1 })
    expect(h.payments.purchases.poll(a.invoice_id).status).toBe('expired')
    expect(h.payments.purchases.poll(b.invoice_id).status).toBe('invalid')
  })

  it('an unreachable provider leaves the invoice pending until it is stale', async () => {
    await connectBtcpay()
    const s = await h.payments.purchases.start({ product: 'app' })
    await btcpay.stop()
    expect(await h.payments.reconciler.tick()).toMatchObject({ checked: 1, errors: 1, settled: 0 })
    expect(h.payments.purchases.poll(s.invoice_id).status).toBe('pending')
    h.clock.advance(25 * HOUR)
    expect((await h.payments.reconciler.tick()).expired).toBe(1)
    btcpay = await new FakeBtcpay().start()
  })

  it('a zero-total purchase whose settlement did not complete settles on the next sweep', async () => {
    satProduct(h, 'gift', 0)
    const licenses = h.services.licenses
    const original = licenses.issue.bind(licenses)
    licenses.issue = () => {
      throw new Error('disk full')
    }
    await expect(h.payments.purchases.start({ product: 'gift' })).rejects.toThrow('disk full')
    licenses.issue = original
    const row = h.services.db.prepare("SELECT id, status FROM invoices WHERE provider = 'free'").get() as {
      id: string
      status: string
    }
    expect(row.status).toBe('pending')
    expect(await h.payments.reconciler.tick()).toMatchObject({ checked: 1, settled: 1 })
    expect(h.payments.purchases.poll(row.id).license_key).toMatch(/^LIC1-/)
  })

  it('a disconnected provider: its pending invoices expire on schedule, nothing crashes', async () => {
    await connectBtcpay()
    const s = await h.payments.purchases.start({ product: 'app' })
    h.payments.providers.disconnect('btcpay')
    expect((await h.payments.reconciler.tick()).expired).toBe(0)
    h.clock.advance(25 * HOUR)
    expect((await h.payments.reconciler.tick()).expired).toBe(1)
    expect(h.payments.purchases.poll(s.invoice_id).status).toBe('expired')
  })
})
