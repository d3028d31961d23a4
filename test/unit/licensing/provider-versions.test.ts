/**
 * What the providers really answer, as recorded in test/fixtures/licensing/{btcpay,zaprite}/:
 * BTCPay Server 1.x and 2.x name the payment-methods currency differently, BTCPay leaves a late
 * payment `Expired` with `PaidLate`, and Zaprite's reference promises an order's status but not its
 * amount nor the list's pagination envelope.
 */
import type { Server } from 'node:http'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { InvoiceRow } from '../../../src-main/licensing/invoices'
import type { ProviderInvoiceSnapshot } from '../../../src-main/licensing/providers/types'
import { ZapriteProvider } from '../../../src-main/licensing/providers/zaprite'
import { judgePayment } from '../../../src-main/licensing/settlement'
import { FakeBtcpay, paymentMethodsFixture, type GreenfieldVersion } from '../../fakes/btcpay'
import { FakeZaprite } from '../../fakes/zaprite'
import { paymentsHarness, satProduct, type Harness, servePaymentRoutes } from './payments-harness'

let h: Harness
let server: Server
let base: string
const fakes: { stop(): Promise<void> }[] = []

beforeEach(async () => {
  h = paymentsHarness()
  satProduct(h)
  ;({ server, base } = await servePaymentRoutes(h))
})

afterEach(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()))
  await h.close()
  await Promise.all(fakes.splice(0).map((f) => f.stop()))
})

const row = (id: string) =>
  h.services.db
    .prepare('SELECT status, issued_license_id, payment_flag, payment_flag_detail FROM invoices WHERE id = ?')
    .get(id) as {
    status: string
    issued_license_id: string | null
    payment_flag: string | null
    payment_flag_detail: string | null
  }

async function btcpayServer(greenfield: GreenfieldVersion): Promise<FakeBtcpay> {
  const fake = await new FakeBtcpay({ greenfield }).start()
  fakes.push(fake)
  fake.now = () => h.clock.now()
  fake.webhookUrl = `${base}/v1/btcpay/webhook`
  await h.payments.providers.connectBtcpay({
    baseUrl: fake.url,
    storeId: fake.storeId,
    apiKey: fake.apiKey,
    webhookSecret: fake.webhookSecret,
  })
  return fake
}

async function zapriteServer(): Promise<FakeZaprite> {
  const fake = await new FakeZaprite().start()
  fakes.push(fake)
  fake.now = () => h.clock.now()
  fake.webhookUrl = `${base}/v1/zaprite/webhook`
  await h.payments.providers.connectZaprite({ apiKey: fake.apiKey, baseUrl: fake.url })
  return fake
}

describe('BTCPay Server 1.x and 2.x payment methods', () => {
  it('the fixtures hold the two real shapes: 1.x cryptoCode, 2.x currency', () => {
    const v1 = paymentMethodsFixture('1.x').answer[0]!
    const v2 = paymentMethodsFixture('2.x').answer[0]!
    expect(v1).toHaveProperty('cryptoCode', 'BTC')
    expect(v1).not.toHaveProperty('currency')
    expect(v1).toHaveProperty('paymentMethod')
    expect(v2).toHaveProperty('currency', 'BTC')
    expect(v2).not.toHaveProperty('cryptoCode')
    expect(v2).toHaveProperty('paymentMethodId')
  })

  for (const version of ['1.x', '2.x'] as const) {
    it(`BTCPay ${version}: a paid invoice settles through its webhook`, async () => {
      const btcpay = await btcpayServer(version)
      const s = await h.payments.purchases.start({ product: 'app' })
      const res = await btcpay.pay(s.provider_invoice_id!)
      expect(res.status).toBe(200)
      expect(JSON.parse(res.text)).toMatchObject({ ok: true, outcome: 'settled' })
      expect(row(s.invoice_id)).toMatchObject({ status: 'settled', payment_flag: null })
      expect(btcpay.requests.some((r) => r.path.endsWith('/payment-methods'))).toBe(true)
    })

    it(`BTCPay ${version}: an underpayment is still measured and flagged`, async () => {
      const btcpay = await btcpayServer(version)
      const s = await h.payments.purchases.start({ product: 'app' })
      btcpay.setPaid(s.provider_invoice_id!, '0.00009000')
      await btcpay.pay(s.provider_invoice_id!)
      expect(row(s.invoice_id)).toMatchObject({ status: 'pending', payment_flag: 'underpaid' })
      expect(row(s.invoice_id).payment_flag_detail).toContain('0.00009000 BTC')
    })
  }
})

describe('BTCPay: a payment after expiry (Expired, PaidLate)', () => {
  /** An invoice BTCPay expired (and Tandem closed), then paid in full afterwards. */
  async function paidLate(version: GreenfieldVersion, paymentStatus: 'Processing' | 'Settled') {
    const btcpay = await btcpayServer(version)
    const s = await h.payments.purchases.start({ product: 'app' })
    const inv = btcpay.invoices.get(s.provider_invoice_id!)!
    inv.status = 'Expired'
    await btcpay.sendEvent('InvoiceExpired', inv.id)
    expect(row(s.invoice_id).status).toBe('expired')
    inv.additionalStatus = 'PaidLate'
    inv.totalPaid = inv.amount
    inv.paymentStatus = paymentStatus
    return { btcpay, s, inv }
  }

  for (const version of ['1.x', '2.x'] as const) {
    it(`BTCPay ${version}: settles once the late payment is confirmed, flagged paid_late`, async () => {
      const { btcpay, s, inv } = await paidLate(version, 'Processing')
      const early = await btcpay.sendEvent('InvoicePaidAfterExpiration', inv.id)
      expect(JSON.parse(early.text)).toMatchObject({ outcome: 'still_pending' })
      expect(row(s.invoice_id).status).toBe('expired')

      inv.paymentStatus = 'Settled'
      const res = await btcpay.sendEvent('InvoicePaymentSettled', inv.id)
      expect(JSON.parse(res.text)).toMatchObject({ ok: true, outcome: 'settled' })
      const r = row(s.invoice_id)
      expect(r).toMatchObject({ status: 'settled', payment_flag: 'paid_late' })
      expect(r.issued_license_id).not.toBeNull()
      const flagged = await h.payments.handlers.licAdminInvoices(
        { flagged: true, sort: 'created_at', order: 'desc', limit: 100, offset: 0 },
        {} as never,
      )
      expect(flagged.items.map((i) => [i.id, i.payment_flag])).toEqual([[s.invoice_id, 'paid_late']])
    })
  }

  it('a late payment whose webhook was lost settles on the next reconciliation tick', async () => {
    const { s } = await paidLate('2.x', 'Settled')
    const report = await h.payments.reconciler.tick()
    expect(report.settled).toBe(1)
    expect(row(s.invoice_id)).toMatchObject({ status: 'settled', payment_flag: 'paid_late' })
  })

  it('an expired invoice without a late payment stays expired', async () => {
    const btcpay = await btcpayServer('2.x')
    const s = await h.payments.purchases.start({ product: 'app' })
    btcpay.setStatus(s.provider_invoice_id!, 'Expired')
    await btcpay.sendEvent('InvoiceExpired', s.provider_invoice_id!)
    expect((await h.payments.reconciler.tick()).settled).toBe(0)
    expect(row(s.invoice_id)).toMatchObject({ status: 'expired', payment_flag: null })
  })
})

describe('Zaprite: only what its reference promises', () => {
  /** Serves the order as the fixture's status-only order does: no amount, no currency, nothing paid. */
  function statusOnly(zaprite: FakeZaprite, id: string): void {
    const o = zaprite.orders.get(id)! as unknown as Record<string, unknown>
    delete o.amount
    delete o.currency
    delete o.paidAmount
  }

  it('a PAID order without amount or currency settles on its status, flagged amount_unverified', async () => {
    const zaprite = await zapriteServer()
    const s = await h.payments.purchases.start({ product: 'app' })
    zaprite.setStatus(s.provider_invoice_id!, 'PAID')
    statusOnly(zaprite, s.provider_invoice_id!)
    const res = await zaprite.pay(s.provider_invoice_id!, 'PAID')
    expect(res.status).toBe(200)
    expect(JSON.parse(res.text)).toMatchObject({ outcome: 'settled' })
    expect(row(s.invoice_id)).toMatchObject({ status: 'settled', payment_flag: 'amount_unverified' })
    expect(row(s.invoice_id).payment_flag_detail).toContain('0.00010000 BTC')
  })

  it('an UNDERPAID order without amounts waits, flagged underpaid', async () => {
    const zaprite = await zapriteServer()
    const s = await h.payments.purchases.start({ product: 'app' })
    zaprite.setStatus(s.provider_invoice_id!, 'UNDERPAID')
    statusOnly(zaprite, s.provider_invoice_id!)
    await zaprite.pay(s.provider_invoice_id!, 'UNDERPAID')
    expect(row(s.invoice_id)).toMatchObject({ status: 'pending', payment_flag: 'underpaid' })
  })

  it('the order list settles status-only orders and pages without meta', async () => {
    const zaprite = await zapriteServer()
    zaprite.listMeta = 'absent'
    const s = await h.payments.purchases.start({ product: 'app' })
    zaprite.setStatus(s.provider_invoice_id!, 'PAID')
    statusOnly(zaprite, s.provider_invoice_id!)
    const report = await h.payments.reconciler.tick()
    expect(report).toMatchObject({ settled: 1, errors: 0 })
    expect(row(s.invoice_id)).toMatchObject({ status: 'settled', payment_flag: 'amount_unverified' })
  })

  it('a list with null meta, or one that ignores the page, is read within bounded pages', async () => {
    const zaprite = await zapriteServer()
    const provider = new ZapriteProvider({ baseUrl: zaprite.url, apiKey: zaprite.apiKey })
    for (let i = 0; i < 150; i++) await h.payments.purchases.start({ product: 'app' })
    const paid = [...zaprite.orders.keys()].slice(0, 3)
    for (const id of paid) zaprite.setStatus(id, 'PAID')

    zaprite.listMeta = 'null'
    expect((await provider.listPaid(0)).map((o) => o.providerInvoiceId).sort()).toEqual([...paid].sort())

    zaprite.listMeta = 'absent'
    zaprite.ignoresPage = true
    const before = zaprite.requests.length
    const listed = await provider.listPaid(0)
    // The same first page twice: the second answer brings nothing new, so paging stops there.
    expect(zaprite.requests.length - before).toBe(2)
    expect(new Set(listed.map((o) => o.providerInvoiceId)).size).toBe(listed.length)
  })
})

describe('judgePayment: late payments and records without amounts', () => {
  const inv = { id: 'i1', provider: 'btcpay', amount_sats: 10_000, listed_currency: 'SAT' } as InvoiceRow
  const snap = (over: Partial<ProviderInvoiceSnapshot>): ProviderInvoiceSnapshot => ({
    providerInvoiceId: 'x1',
    status: 'settled',
    providerStatus: 'Expired (PaidLate)',
    localInvoiceId: 'i1',
    amount: { currency: 'BTC', value: 10_000 },
    paid: { currency: 'BTC', value: 10_000 },
    paidVerdict: null,
    storeId: null,
    late: true,
    ...over,
  })

  it('a late payment settles flagged paid_late; a late overpayment stays overpaid and says it was late', () => {
    expect(judgePayment(inv, snap({}), null)).toEqual({
      settle: true,
      flag: 'paid_late',
      detail: 'the payment arrived after the invoice expired',
    })
    const over = judgePayment(inv, snap({ paid: { currency: 'BTC', value: 12_000 } }), null)
    expect(over).toMatchObject({ settle: true, flag: 'overpaid' })
    expect(over.settle && over.flag !== null && over.detail).toContain('after the invoice expired')
    expect(judgePayment(inv, snap({ paid: { currency: 'BTC', value: 9_000 } }), null)).toMatchObject({
      settle: false,
      flag: 'underpaid',
    })
  })

  it('without amount and paid total the status decides: settled → amount_unverified, OVERPAID → overpaid', () => {
    const bare = { amount: null, paid: null, late: undefined, providerStatus: 'PAID' }
    expect(judgePayment(inv, snap(bare), null)).toMatchObject({ settle: true, flag: 'amount_unverified' })
    expect(judgePayment(inv, snap({ ...bare, paidVerdict: 'over' }), null)).toMatchObject({
      settle: true,
      flag: 'overpaid',
    })
    // A reported paid total is still measured when only the order amount is missing.
    expect(judgePayment(inv, snap({ ...bare, paid: { currency: 'BTC', value: 10_000 } }), null)).toEqual({
      settle: true,
      flag: null,
    })
  })
})
