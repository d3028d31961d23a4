import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { AccessEntitlementsInput, PolicyPatch } from '../../../src-main/contract/licensing'
import type { InvoiceRow } from '../../../src-main/licensing/invoices'
import { FakeBtcpay } from '../../fakes/btcpay'
import { connectShop, paymentsHarness, satProduct, tierOn, type Harness } from './payments-harness'

/** A bought top-up (issue 45): an invoice aimed at the license, whose settlement adds the pack once. */
const DAY = 86_400_000
const PACK = { tokens: 50, price_value: 300 }
let h: Harness
let btcpay: FakeBtcpay

beforeEach(async () => {
  btcpay = await new FakeBtcpay().start()
  h = paymentsHarness()
  const { productId } = satProduct(h)
  tierOn(
    h,
    productId,
    { slug: 'api', rank: 1, price: 1000 },
    { access: AccessEntitlementsInput.parse({ tokens_per_period: 100, top_up: PACK }) },
  )
  await connectShop(h, btcpay)
})

afterEach(async () => {
  await h.close()
  await btcpay.stop()
})

async function license(): Promise<{ licenseId: string; licenseKey: string }> {
  const s = await h.payments.purchases.start({ product: 'app', policy: 'api' })
  expect(h.payments.settlement.settle(s.invoice_id, { actor: 'provider', via: 'test' }).kind).toBe('issued')
  const p = h.payments.purchases.poll(s.invoice_id)
  return { licenseId: p.license_id!, licenseKey: p.license_key! }
}

const settle = (invoiceId: string) => h.payments.settlement.settle(invoiceId, { actor: 'provider', via: 'test' })
const count = (sql: string, ...args: unknown[]): number => (h.services.db.prepare(sql).get(...args) as { n: number }).n

describe('a bought top-up', () => {
  it('settles into the license it was opened for, adds its tokens once however often it is settled', async () => {
    const { licenseId, licenseKey } = await license()
    const started = await h.payments.topUps.start({ license_key: licenseKey })
    expect(started).toMatchObject({ license_id: licenseId, tokens: 50, listed_value: 300, amount_sats: 300 })
    const invoice = h.services.db.prepare('SELECT * FROM invoices WHERE id = ?').get(started.invoice_id) as InvoiceRow
    expect(invoice).toMatchObject({ kind: 'top_up', status: 'pending', issued_license_id: null })
    const licenses = count('SELECT count(*) AS n FROM licenses')

    expect(settle(started.invoice_id)).toEqual({ kind: 'handled', branch: 'top_up', licenseId })
    expect(h.services.licenses.quotas.quota(licenseId)).toMatchObject({ tokens_per_period: 100, top_up_tokens: 50 })
    expect(settle(started.invoice_id).kind).toBe('already_settled')
    // Past the settled check too (a replay inside a racing settle): the invoice's unique top-up holds.
    const settled = h.services.db.prepare('SELECT * FROM invoices WHERE id = ?').get(started.invoice_id) as InvoiceRow
    expect(h.payments.topUps.applyForInvoice(settled, h.clock.now())).toEqual({ licenseId })

    expect(h.services.licenses.quotas.quota(licenseId)?.top_up_tokens).toBe(50)
    expect(count("SELECT count(*) AS n FROM access_top_ups WHERE source = 'paid'")).toBe(1)
    expect(count('SELECT count(*) AS n FROM licenses')).toBe(licenses)
    expect(count("SELECT count(*) AS n FROM webhook_deliveries WHERE event = 'license.topped_up'")).toBe(1)
    expect(count("SELECT count(*) AS n FROM audit_log WHERE action = 'license.top_up'")).toBe(1)
  })

  it('counts in the period its settlement falls in, with the tokens it was opened for', async () => {
    const { licenseId, licenseKey } = await license()
    const started = await h.payments.topUps.start({ license_key: licenseKey })
    const opened = h.services.licenses.quotas.quota(licenseId)!
    // The seller changes the pack meanwhile: the buyer gets what the invoice was opened for.
    const tier = h.services.catalog.policyBySlug(h.services.catalog.productBySlug('app')!.id, 'api')!
    h.services.catalog.updatePolicy(
      tier.id,
      PolicyPatch.parse({ access: { tokens_per_period: 100, top_up: { tokens: 9, price_value: 1 } } }),
    )
    h.clock.advance(40 * DAY)
    settle(started.invoice_id)
    const now = h.services.licenses.quotas.quota(licenseId)!
    expect(now.period_start).not.toBe(opened.period_start)
    expect(now.top_up_tokens).toBe(50)
  })

  it('is refused for a tier without a pack, and the refusal opens no invoice', async () => {
    const { productId } = satProduct(h, 'plain')
    tierOn(
      h,
      productId,
      { slug: 'api', rank: 1, price: 1000 },
      { access: AccessEntitlementsInput.parse({ tokens_per_period: 100 }) },
    )
    const s = await h.payments.purchases.start({ product: 'plain', policy: 'api' })
    settle(s.invoice_id)
    const key = h.payments.purchases.poll(s.invoice_id).license_key!
    const invoices = count('SELECT count(*) AS n FROM invoices')
    await expect(h.payments.topUps.start({ license_key: key })).rejects.toMatchObject({
      code: 'conflict',
      message: 'tier api sells no top-up: ask the seller',
    })
    expect(count('SELECT count(*) AS n FROM invoices')).toBe(invoices)
  })
})

describe('a tier’s top-up pack', () => {
  it('needs a token quota, at least one token and a price above zero', () => {
    const issue = (v: unknown) => AccessEntitlementsInput.safeParse(v).error?.issues[0]?.path.join('.')
    expect(issue({ tokens_per_period: 10, top_up: PACK })).toBeUndefined()
    expect(issue({ top_up: PACK })).toBe('top_up')
    expect(issue({ tokens_per_period: 10, top_up: { tokens: 0, price_value: 1 } })).toBe('top_up.tokens')
    expect(issue({ tokens_per_period: 10, top_up: { tokens: 5, price_value: 0 } })).toBe('top_up.price_value')
    expect(issue({ tokens_per_period: 10, top_up: { tokens: 5, price_value: 1, currency: 'USD' } })).toBe('top_up')
    expect(AccessEntitlementsInput.parse({ tokens_per_period: 10 }).top_up).toBeNull()
  })
})
