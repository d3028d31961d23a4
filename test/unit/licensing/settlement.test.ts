import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { DiscountInput } from '../../../src-main/contract/licensing'
import { FakeBtcpay } from '../../fakes/btcpay'
import { paymentsHarness, satProduct, type Harness } from './payments-harness'

let h: Harness
let btcpay: FakeBtcpay

const licenseCount = (invoiceId: string): number =>
  (h.services.db.prepare('SELECT count(*) AS n FROM licenses WHERE invoice_id = ?').get(invoiceId) as { n: number }).n
const invoice = (id: string) =>
  h.services.db.prepare('SELECT status, issued_license_id FROM invoices WHERE id = ?').get(id) as {
    status: string
    issued_license_id: string | null
  }

beforeEach(async () => {
  btcpay = await new FakeBtcpay().start()
  h = paymentsHarness()
  satProduct(h)
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

describe('settlement', () => {
  it('a replayed settle keeps one license and the same key', async () => {
    const s = await h.payments.purchases.start({ product: 'app' })
    const first = h.payments.settlement.settle(s.invoice_id, { actor: 'provider', via: 'test' })
    expect(first.kind).toBe('issued')
    const key = h.payments.purchases.poll(s.invoice_id).license_key
    for (let i = 0; i < 3; i++) {
      const again = h.payments.settlement.settle(s.invoice_id, { actor: 'provider', via: 'replay' })
      expect(again).toEqual({ kind: 'already_settled', licenseId: first.kind === 'issued' ? first.licenseId : null })
    }
    expect(licenseCount(s.invoice_id)).toBe(1)
    expect(h.payments.purchases.poll(s.invoice_id).license_key).toBe(key)
  })

  it('concurrent re-checks that all see the payment issue one license', async () => {
    const s = await h.payments.purchases.start({ product: 'app' })
    btcpay.setStatus(s.provider_invoice_id!, 'Settled')
    const outcomes = await Promise.all(Array.from({ length: 6 }, () => h.payments.reconciler.recheck(s.invoice_id)))
    expect(outcomes.filter((o) => o === 'settled').length).toBeGreaterThanOrEqual(1)
    expect(licenseCount(s.invoice_id)).toBe(1)
    expect(invoice(s.invoice_id).status).toBe('settled')
  })

  it('a crash between issuing and recording leaves nothing behind; the retry issues once', async () => {
    const s = await h.payments.purchases.start({ product: 'app' })
    const licenses = h.services.licenses.issuing
    const original = licenses.issue.bind(licenses)
    licenses.issue = (a) => {
      original(a) // the license row is written...
      throw new Error('power cut') // ...and the process dies before the invoice is marked
    }
    expect(() => h.payments.settlement.settle(s.invoice_id, { actor: 'provider', via: 'test' })).toThrow('power cut')
    licenses.issue = original
    expect(invoice(s.invoice_id)).toEqual({ status: 'pending', issued_license_id: null })
    expect(licenseCount(s.invoice_id)).toBe(0)
    const audits = h.services.db
      .prepare("SELECT count(*) AS n FROM audit_log WHERE action = 'invoice.settled'")
      .get() as { n: number }
    expect(audits.n).toBe(0)

    expect(h.payments.settlement.settle(s.invoice_id, { actor: 'provider', via: 'retry' }).kind).toBe('issued')
    expect(licenseCount(s.invoice_id)).toBe(1)
  })

  it('the schema refuses a second license for one invoice', async () => {
    const s = await h.payments.purchases.start({ product: 'app' })
    h.payments.settlement.settle(s.invoice_id, { actor: 'provider', via: 'test' })
    const product = h.services.catalog.productBySlug('app')!
    const policy = h.services.catalog.resolvePolicy(product)
    expect(() =>
      h.services.licenses.issuing.issue({ product, policy, source: 'purchase', invoiceId: s.invoice_id }),
    ).toThrow(/UNIQUE/)
    expect(licenseCount(s.invoice_id)).toBe(1)
  })

  it('branches run before issuance, in order; the first that claims the invoice wins', async () => {
    const s = await h.payments.purchases.start({ product: 'app' })
    const seen: string[] = []
    h.payments.settlement.addBranch({ name: 'tier_change', apply: () => (seen.push('tier_change'), null) })
    h.payments.settlement.addBranch({
      name: 'subscription',
      apply: (inv) => (seen.push('subscription'), inv.id === s.invoice_id ? { licenseId: null } : null),
    })
    h.payments.settlement.addBranch({ name: 'never', apply: () => (seen.push('never'), null) })
    const out = h.payments.settlement.settle(s.invoice_id, { actor: 'provider', via: 'test' })
    expect(out).toEqual({ kind: 'handled', branch: 'subscription', licenseId: null })
    expect(seen).toEqual(['tier_change', 'subscription'])
    expect(licenseCount(s.invoice_id)).toBe(0)
    expect(invoice(s.invoice_id).status).toBe('settled')
  })

  it('a discount reserved at checkout is redeemed on settle and released when the invoice expires', async () => {
    h.services.discounts.create(DiscountInput.parse({ code: 'HALF', kind: 'percent', value: 50, max_redemptions: 2 }))
    const paid = await h.payments.purchases.start({ product: 'app', code: 'HALF' })
    const unpaid = await h.payments.purchases.start({ product: 'app', code: 'half' })
    expect(paid.amount_sats).toBe(5_000)
    const status = (inv: string) =>
      (
        h.services.db.prepare('SELECT status FROM discount_redemptions WHERE invoice_id = ?').get(inv) as {
          status: string
        }
      ).status
    expect([status(paid.invoice_id), status(unpaid.invoice_id)]).toEqual(['pending', 'pending'])
    // Both uses are reserved: a third buyer is refused while they are pending.
    await expect(h.payments.purchases.start({ product: 'app', code: 'HALF' })).rejects.toThrow(/used up/)

    h.payments.settlement.settle(paid.invoice_id, { actor: 'provider', via: 'test' })
    expect(status(paid.invoice_id)).toBe('redeemed')
    h.clock.advance(25 * 3600 * 1000)
    await h.payments.reconciler.tick()
    expect(invoice(unpaid.invoice_id).status).toBe('expired')
    expect(status(unpaid.invoice_id)).toBe('cancelled')
    await expect(h.payments.purchases.start({ product: 'app', code: 'HALF' })).resolves.toMatchObject({
      amount_sats: 5_000,
    })
  })

  it('a failed checkout closes the invoice as invalid and frees its discount', async () => {
    h.services.discounts.create(DiscountInput.parse({ code: 'ONCE', kind: 'percent', value: 10, max_redemptions: 1 }))
    await btcpay.stop()
    await expect(h.payments.purchases.start({ product: 'app', code: 'ONCE' })).rejects.toMatchObject({ status: 502 })
    const row = h.services.db.prepare("SELECT id, status FROM invoices WHERE kind = 'purchase'").get() as {
      id: string
      status: string
    }
    expect(row.status).toBe('invalid')
    const r = h.services.db.prepare('SELECT status FROM discount_redemptions WHERE invoice_id = ?').get(row.id) as {
      status: string
    }
    expect(r.status).toBe('cancelled')
    btcpay = await new FakeBtcpay().start()
  })

  it('a zero total settles at once without a provider', async () => {
    h.services.discounts.create(DiscountInput.parse({ code: 'FREE100', kind: 'percent', value: 100 }))
    const s = await h.payments.purchases.start({ product: 'app', code: 'FREE100' })
    expect(s).toMatchObject({ status: 'settled', provider: 'free', amount_sats: 0 })
    expect(h.payments.purchases.poll(s.invoice_id).license_key).toMatch(/^LIC1-/)
    expect(btcpay.requests.filter((r) => r.method === 'POST')).toHaveLength(0)
  })
})
