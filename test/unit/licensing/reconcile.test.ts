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
    const licenses = h.services.licenses.issuing
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

describe('reconciliation by list', () => {
  /** `n` pending BTCPay invoices nobody will pay, straight into the database and the fake. */
  function junk(n: number): void {
    const { productId, policyId } = product
    const now = h.clock.now()
    const insert = h.services.db.prepare(
      `INSERT INTO invoices (id, kind, product_id, policy_id, provider, provider_invoice_id, amount_sats, status,
         created_at, updated_at, expires_at) VALUES (?, 'purchase', ?, ?, 'btcpay', ?, 10000, 'pending', ?, ?, ?)`,
    )
    h.services.db.transaction(() => {
      for (let i = 0; i < n; i++) {
        const id = `JunkInv${i}`
        btcpay.invoices.set(id, {
          id,
          storeId: btcpay.storeId,
          amount: '0.00010000',
          currency: 'BTC',
          status: 'New',
          metadata: { orderId: `junk-${i}` },
          redirectURL: null,
          checkoutLink: `${btcpay.url}/i/${id}`,
          createdTime: Math.floor(now / 1000),
          totalPaid: '0.00000000',
        })
        insert.run(`junk-${i}`, productId, policyId, id, now, now - 1, now + 24 * HOUR)
      }
    })()
  }
  let product: { productId: string; policyId: string }

  beforeEach(() => {
    btcpay.now = () => h.clock.now()
    const p = h.services.db.prepare("SELECT id FROM products WHERE slug = 'app'").get() as { id: string }
    const pol = h.services.db.prepare('SELECT id FROM policies WHERE product_id = ?').get(p.id) as { id: string }
    product = { productId: p.id, policyId: pol.id }
  })

  it('a paid invoice whose webhook was lost settles on the next tick despite 1,000 junk pending invoices', async () => {
    await connectBtcpay()
    junk(1000)
    h.clock.advance(1000)
    const paid = await h.payments.purchases.start({ product: 'app' })
    btcpay.setStatus(paid.provider_invoice_id!, 'Settled') // no webhook
    const before = btcpay.requests.length
    h.clock.advance(60_000) // the worker's interval
    const report = await h.payments.reconciler.tick()
    expect(h.payments.purchases.poll(paid.invoice_id).status).toBe('settled')
    expect(report).toMatchObject({ listed: 1, settled: 1 })
    const calls = btcpay.requests.slice(before)
    const lists = calls.filter((r) => /\/invoices\?/.test(r.path))
    // The settled invoices, then the expired ones BTCPay marks paid late: one page each here.
    expect(lists.map((r) => new URL(r.path, btcpay.url).searchParams.get('status'))).toEqual(['Settled', 'Expired'])
    // Two list calls, the paid invoice confirmed (2 calls), and a bounded batch of single look-ups.
    expect(calls.length).toBeLessThanOrEqual(2 + 2 + 25)
  })

  it('an invoice the provider no longer knows is invalid after three "not found" in a row, logged once', async () => {
    await connectBtcpay()
    const s = await h.payments.purchases.start({ product: 'app' })
    btcpay.invoices.delete(s.provider_invoice_id!)
    const warnings = () => h.logs.lines.filter((l) => l.includes(s.invoice_id)).length
    await h.payments.reconciler.tick()
    await h.payments.reconciler.tick()
    expect(h.payments.purchases.poll(s.invoice_id).status).toBe('pending')
    expect(warnings()).toBe(0)
    const third = await h.payments.reconciler.tick()
    expect(third.invalid).toBe(1)
    expect(h.payments.purchases.poll(s.invoice_id).status).toBe('invalid')
    expect(h.logs.lines.filter((l) => l.includes('no longer knows') && l.includes(s.invoice_id))).toHaveLength(1)
    await h.payments.reconciler.tick()
    expect(h.logs.lines.filter((l) => l.includes('no longer knows'))).toHaveLength(1)
  })

  it('a "found" answer in between starts the count again', async () => {
    await connectBtcpay()
    const s = await h.payments.purchases.start({ product: 'app' })
    const record = btcpay.invoices.get(s.provider_invoice_id!)!
    btcpay.invoices.delete(record.id)
    await h.payments.reconciler.tick()
    await h.payments.reconciler.tick()
    btcpay.invoices.set(record.id, record)
    await h.payments.reconciler.tick()
    btcpay.invoices.delete(record.id)
    await h.payments.reconciler.tick()
    await h.payments.reconciler.tick()
    expect(h.payments.purchases.poll(s.invoice_id).status).toBe('pending')
  })

  it('Zaprite: one order-list call settles a paid order with no webhook', async () => {
    zaprite.now = () => h.clock.now()
    await h.payments.providers.connectZaprite({ apiKey: zaprite.apiKey, baseUrl: zaprite.url })
    const paid = await h.payments.purchases.start({ product: 'app' })
    for (let i = 0; i < 30; i++) await h.payments.purchases.start({ product: 'app' })
    zaprite.setStatus(paid.provider_invoice_id!, 'PAID')
    const before = zaprite.requests.length
    const report = await h.payments.reconciler.tick()
    expect(report).toMatchObject({ listed: 1, settled: 1 })
    expect(zaprite.requests.slice(before).filter((r) => r.path.startsWith('/v1/orders?'))).toHaveLength(1)
    expect(h.payments.purchases.poll(paid.invoice_id).status).toBe('settled')
  })
})
