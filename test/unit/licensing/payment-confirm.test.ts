import type { Server } from 'node:http'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { InvoiceQuery } from '../../../src-main/contract/licensing'
import type { InvoiceRow } from '../../../src-main/licensing/invoices'
import type { ProviderInvoiceSnapshot } from '../../../src-main/licensing/providers/types'
import { judgePayment } from '../../../src-main/licensing/settlement'
import { FakeBtcpay } from '../../fakes/btcpay'
import { FakeZaprite } from '../../fakes/zaprite'
import { paymentsHarness, type Harness, servePaymentRoutes } from './payments-harness'

let h: Harness
let btcpay: FakeBtcpay
let zaprite: FakeZaprite
let server: Server
let base: string

beforeEach(async () => {
  btcpay = await new FakeBtcpay().start()
  zaprite = await new FakeZaprite().start()
  h = paymentsHarness()
  btcpay.now = () => h.clock.now()
  zaprite.now = () => h.clock.now()
  h.services.catalog.createProduct({
    slug: 'app',
    name: 'App',
    description: '',
    price_currency: 'SAT',
    price_value: 10_000,
    entitlements_catalog: [],
    active: true,
  })
  ;({ server, base } = await servePaymentRoutes(h))
  btcpay.webhookUrl = `${base}/v1/btcpay/webhook`
  zaprite.webhookUrl = `${base}/v1/zaprite/webhook`
})

afterEach(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()))
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

const row = (id: string) =>
  h.services.db
    .prepare('SELECT status, issued_license_id, payment_flag, payment_flag_detail FROM invoices WHERE id = ?')
    .get(id) as {
    status: string
    issued_license_id: string | null
    payment_flag: string | null
    payment_flag_detail: string | null
  }
const licenses = (id: string) =>
  (h.services.db.prepare('SELECT count(*) AS n FROM licenses WHERE invoice_id = ?').get(id) as { n: number }).n

describe('settlement is confirmed at the provider (BTCPay)', () => {
  it('a validly signed InvoiceSettled for an invoice unpaid at BTCPay settles nothing', async () => {
    await connectBtcpay()
    const s = await h.payments.purchases.start({ product: 'app' })
    const res = await btcpay.sendEvent('InvoiceSettled', s.provider_invoice_id!) // signed, but nobody paid
    expect(res.status).toBe(200)
    expect(JSON.parse(res.text)).toMatchObject({ ok: true, outcome: 'still_pending' })
    expect(row(s.invoice_id)).toMatchObject({ status: 'pending', issued_license_id: null })
    expect(licenses(s.invoice_id)).toBe(0)
    // Every settle claim was checked against BTCPay's own record.
    expect(btcpay.requests.some((r) => r.method === 'GET' && r.path.endsWith(s.provider_invoice_id!))).toBe(true)
  })

  it('underpaid: not settled, flagged with both amounts', async () => {
    await connectBtcpay()
    const s = await h.payments.purchases.start({ product: 'app' })
    btcpay.setPaid(s.provider_invoice_id!, '0.00009000')
    const res = await btcpay.pay(s.provider_invoice_id!)
    expect(JSON.parse(res.text)).toMatchObject({ outcome: 'flagged' })
    const r = row(s.invoice_id)
    expect(r).toMatchObject({ status: 'pending', payment_flag: 'underpaid', issued_license_id: null })
    expect(r.payment_flag_detail).toContain('0.00009000 BTC')
    expect(r.payment_flag_detail).toContain('0.00010000 BTC')
    const flagged = await h.payments.handlers.licAdminInvoices(
      { flagged: true, sort: 'created_at', order: 'desc', limit: 100, offset: 0 },
      {} as never,
    )
    expect(flagged.items.map((i) => [i.id, i.payment_flag])).toEqual([[s.invoice_id, 'underpaid']])
    expect(h.logs.lines.filter((l) => l.includes('invoice flagged: underpaid'))).toHaveLength(1)
  })

  it('overpaid: settled and flagged', async () => {
    await connectBtcpay()
    const s = await h.payments.purchases.start({ product: 'app' })
    btcpay.setPaid(s.provider_invoice_id!, '0.00012000')
    const res = await btcpay.pay(s.provider_invoice_id!)
    expect(JSON.parse(res.text)).toMatchObject({ outcome: 'settled' })
    expect(row(s.invoice_id)).toMatchObject({ status: 'settled', payment_flag: 'overpaid' })
    expect(row(s.invoice_id).payment_flag_detail).toContain('0.00012000 BTC')
    expect(licenses(s.invoice_id)).toBe(1)
  })

  it('a record in another currency or another store is refused and flagged', async () => {
    await connectBtcpay()
    const a = await h.payments.purchases.start({ product: 'app' })
    const b = await h.payments.purchases.start({ product: 'app' })
    const fa = btcpay.invoices.get(a.provider_invoice_id!)!
    fa.currency = 'USD'
    fa.amount = '10.00'
    btcpay.invoices.get(b.provider_invoice_id!)!.storeId = 'OtherStore'
    await btcpay.pay(a.provider_invoice_id!)
    await btcpay.pay(b.provider_invoice_id!)
    expect(row(a.invoice_id)).toMatchObject({ status: 'pending', payment_flag: 'currency_mismatch' })
    expect(row(b.invoice_id)).toMatchObject({ status: 'pending', payment_flag: 'store_mismatch' })
    expect(licenses(a.invoice_id) + licenses(b.invoice_id)).toBe(0)
  })

  it('a paid invoice delivered 20 times at once issues one license', async () => {
    await connectBtcpay()
    const s = await h.payments.purchases.start({ product: 'app' })
    btcpay.setStatus(s.provider_invoice_id!, 'Settled')
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => btcpay.sendEvent('InvoiceSettled', s.provider_invoice_id!)),
    )
    expect(answers.every((a) => a.status === 200)).toBe(true)
    expect(licenses(s.invoice_id)).toBe(1)
    expect(row(s.invoice_id).status).toBe('settled')
    const replay = await btcpay.sendEvent('InvoiceSettled', s.provider_invoice_id!)
    expect(JSON.parse(replay.text)).toMatchObject({ outcome: 'already_settled' })
    expect(licenses(s.invoice_id)).toBe(1)
  })
})

describe('settlement is confirmed at the provider (Zaprite)', () => {
  it('UNDERPAID is flagged and waits; OVERPAID settles and is flagged', async () => {
    await h.payments.providers.connectZaprite({ apiKey: zaprite.apiKey, baseUrl: zaprite.url })
    const a = await h.payments.purchases.start({ product: 'app' })
    const b = await h.payments.purchases.start({ product: 'app' })
    zaprite.setPaid(a.provider_invoice_id!, 4_000)
    await zaprite.pay(a.provider_invoice_id!, 'UNDERPAID')
    zaprite.setPaid(b.provider_invoice_id!, 15_000)
    await zaprite.pay(b.provider_invoice_id!, 'OVERPAID')
    expect(row(a.invoice_id)).toMatchObject({ status: 'pending', payment_flag: 'underpaid' })
    expect(row(a.invoice_id).payment_flag_detail).toContain('0.00004000 BTC')
    expect(row(b.invoice_id)).toMatchObject({ status: 'settled', payment_flag: 'overpaid' })
    expect(licenses(b.invoice_id)).toBe(1)
  })

  it('a PAID order whose amount is lower than the invoice does not settle', async () => {
    await h.payments.providers.connectZaprite({ apiKey: zaprite.apiKey, baseUrl: zaprite.url })
    const s = await h.payments.purchases.start({ product: 'app' })
    zaprite.orders.get(s.provider_invoice_id!)!.amount = 1 // edited at Zaprite after creation
    await zaprite.pay(s.provider_invoice_id!, 'PAID')
    expect(row(s.invoice_id)).toMatchObject({ status: 'pending', payment_flag: 'underpaid' })
  })
})

describe('judgePayment (the comparison itself)', () => {
  const inv = (over: Partial<InvoiceRow>): InvoiceRow =>
    ({
      id: 'i1',
      provider: 'zaprite',
      amount_sats: 50_000,
      listed_currency: 'USD',
      listed_value: 4_900,
      ...over,
    }) as InvoiceRow
  const snap = (over: Partial<ProviderInvoiceSnapshot>): ProviderInvoiceSnapshot => ({
    providerInvoiceId: 'od_1',
    status: 'settled',
    providerStatus: 'PAID',
    localInvoiceId: 'i1',
    amount: { currency: 'USD', value: 4_900 },
    paid: { currency: 'USD', value: 4_900 },
    paidVerdict: null,
    storeId: null,
    ...over,
  })

  it('a fiat item at Zaprite is compared in its own cents', () => {
    expect(judgePayment(inv({}), snap({}), null)).toEqual({ settle: true, flag: null })
    expect(judgePayment(inv({}), snap({ paid: { currency: 'USD', value: 4_899 } }), null)).toMatchObject({
      settle: false,
      flag: 'underpaid',
      detail: 'paid 48.99 USD, expected 49.00 USD',
    })
    expect(judgePayment(inv({}), snap({ amount: { currency: 'EUR', value: 4_900 }, paid: null }), null)).toMatchObject({
      settle: false,
      flag: 'currency_mismatch',
    })
  })

  it('a BTCPay record is compared in sats and must name our store', () => {
    const btc = inv({ provider: 'btcpay', listed_currency: 'USD' })
    const rec = snap({ amount: { currency: 'BTC', value: 50_000 }, paid: null, storeId: 'S1' })
    expect(judgePayment(btc, rec, 'S1')).toEqual({ settle: true, flag: null })
    expect(judgePayment(btc, rec, 'S2')).toMatchObject({ settle: false, flag: 'store_mismatch' })
    expect(judgePayment(btc, { ...rec, status: 'pending' }, 'S1')).toMatchObject({ settle: false, flag: 'underpaid' })
  })

  it('the admin filter reads flagged=true from a query string', () => {
    expect(InvoiceQuery.parse({ flagged: 'true' }).flagged).toBe(true)
    expect(InvoiceQuery.parse({ flagged: 'false' }).flagged).toBe(false)
    expect(InvoiceQuery.safeParse({ flagged: 'yes' }).success).toBe(false)
  })
})
