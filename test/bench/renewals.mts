// Renewal worker bench (issue 11): 10,000 subscriptions fall due at once; the worker (25 per tick)
// drains them against the loopback BTCPay fake. Prints ticks to drain, ms per tick (mean, p50, p99)
// and renewal invoices created per second. Run: npx tsx test/bench/renewals.mts
import { performance } from 'node:perf_hooks'
import type { InvoiceRow } from '../../src-main/licensing/invoices'

// The sources are CommonJS under tsx: named imports come through dynamic import (as in licensing.mts).
const { PolicyInput } = await import('../../src-main/contract/licensing')
const { FakeBtcpay } = await import('../fakes/btcpay')
const { paymentsHarness, satProduct } = await import('../unit/licensing/payments-harness')

const SUBSCRIPTIONS = 10_000
const DAY = 86_400_000

const btcpay = await new FakeBtcpay().start()
const h = paymentsHarness()
try {
  const { productId } = satProduct(h, 'bench', 10_000)
  const tier = h.services.catalog.createPolicy(
    productId,
    PolicyInput.parse({ slug: 'monthly', name: 'Monthly', is_recurring: true, renewal_period_days: 30 }),
  )
  await h.payments.providers.connectBtcpay({
    baseUrl: btcpay.url,
    storeId: btcpay.storeId,
    apiKey: btcpay.apiKey,
    webhookSecret: btcpay.webhookSecret,
  })

  // Seed: one settled purchase invoice and its licence + subscription each, as settlement writes them.
  const { db } = h.services
  const product = h.services.catalog.productRow(productId)!
  const policy = h.services.catalog.policyRow(tier.id)!
  const insertInvoice = db.prepare(
    `INSERT INTO invoices (id, kind, product_id, policy_id, provider, amount_sats, status, created_at, updated_at, settled_at)
     VALUES (?, 'purchase', ?, ?, 'btcpay', 10000, 'settled', ?, ?, ?)`,
  )
  const seedStart = performance.now()
  db.transaction(() => {
    for (let i = 0; i < SUBSCRIPTIONS; i++) {
      const id = `bench-${i}`
      const now = h.clock.now()
      insertInvoice.run(id, productId, policy.id, now, now, now)
      const inv = db.prepare('SELECT * FROM invoices WHERE id = ?').get(id) as InvoiceRow
      h.payments.subscriptions.issueRecurring(inv, product, policy, now)
    }
  })()
  console.log(`seeded ${SUBSCRIPTIONS} subscriptions in ${Math.round(performance.now() - seedStart)} ms`)

  h.clock.advance(30 * DAY)
  const tickMs: number[] = []
  let invoiced = 0
  const start = performance.now()
  for (;;) {
    const t0 = performance.now()
    const r = await h.payments.renewals.tick()
    tickMs.push(performance.now() - t0)
    invoiced += r.invoiced
    if (r.claimed === 0) break
  }
  const totalS = (performance.now() - start) / 1000
  const working = tickMs.slice(0, -1).sort((a, b) => a - b)
  const pct = (p: number) => working[Math.min(working.length - 1, Math.floor((working.length * p) / 100))]!
  const mean = working.reduce((a, b) => a + b, 0) / working.length
  console.log(`ticks to drain: ${working.length} (+1 empty tick)`)
  console.log(`ms per tick: mean ${mean.toFixed(1)}, p50 ${pct(50).toFixed(1)}, p99 ${pct(99).toFixed(1)}`)
  console.log(`renewal invoices: ${invoiced} in ${totalS.toFixed(1)} s → ${(invoiced / totalS).toFixed(0)} per second`)
  console.log(
    `at one tick per 60 s the worker bills ${25 * 60} subscriptions an hour; 10,000 due at once drain in ` +
      `${Math.ceil(SUBSCRIPTIONS / 25)} minutes`,
  )
  if (invoiced !== SUBSCRIPTIONS) throw new Error(`expected ${SUBSCRIPTIONS} renewal invoices, got ${invoiced}`)
} finally {
  await h.close()
  await btcpay.stop()
}
