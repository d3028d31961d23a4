// Reconciliation bench (issue 12): 1,000 pending invoices nobody will pay, at the loopback BTCPay and
// at the loopback Zaprite, plus one paid invoice whose webhook was lost. Prints the tick time
// (mean, p50, p99 over 20 ticks), provider requests per tick, and how many ticks the paid one took
// to settle. Run: npx tsx test/bench/reconcile.mts
import { performance } from 'node:perf_hooks'

// The sources are CommonJS under tsx: named imports come through dynamic import (as in licensing.mts).
const { FakeBtcpay } = await import('../fakes/btcpay')
const { FakeZaprite } = await import('../fakes/zaprite')
const { paymentsHarness, satProduct } = await import('../unit/licensing/payments-harness')

const PENDING = 1_000
const TICKS = 20
const MINUTE = 60_000

type Kind = 'btcpay' | 'zaprite'

async function bench(kind: Kind): Promise<void> {
  const btcpay = await new FakeBtcpay().start()
  const zaprite = await new FakeZaprite().start()
  const h = paymentsHarness()
  btcpay.now = () => h.clock.now()
  zaprite.now = () => h.clock.now()
  try {
    satProduct(h, 'bench', 10_000)
    if (kind === 'btcpay') {
      await h.payments.providers.connectBtcpay({
        baseUrl: btcpay.url,
        storeId: btcpay.storeId,
        apiKey: btcpay.apiKey,
        webhookSecret: btcpay.webhookSecret,
      })
    } else {
      await h.payments.providers.connectZaprite({ apiKey: zaprite.apiKey, baseUrl: zaprite.url })
    }
    const seedStart = performance.now()
    for (let i = 0; i < PENDING; i++) await h.payments.purchases.start({ product: 'bench' })
    console.log(`[${kind}] seeded ${PENDING} pending invoices in ${Math.round(performance.now() - seedStart)} ms`)
    h.clock.advance(MINUTE)
    const paid = await h.payments.purchases.start({ product: 'bench' })
    if (kind === 'btcpay') btcpay.setStatus(paid.provider_invoice_id!, 'Settled')
    else zaprite.setStatus(paid.provider_invoice_id!, 'PAID')

    const fake = kind === 'btcpay' ? btcpay : zaprite
    const tickMs: number[] = []
    const requests: number[] = []
    let settledAt: number | null = null
    for (let t = 1; t <= TICKS; t++) {
      h.clock.advance(MINUTE)
      const before = fake.requests.length
      const t0 = performance.now()
      await h.payments.reconciler.tick()
      tickMs.push(performance.now() - t0)
      requests.push(fake.requests.length - before)
      if (settledAt === null && h.payments.purchases.poll(paid.invoice_id).status === 'settled') settledAt = t
    }
    const sorted = [...tickMs].sort((a, b) => a - b)
    const pct = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!
    const mean = sorted.reduce((a, b) => a + b, 0) / sorted.length
    console.log(
      `[${kind}] tick with ${PENDING} pending: mean ${mean.toFixed(1)} ms, p50 ${pct(50).toFixed(1)} ms, ` +
        `p99 ${pct(99).toFixed(1)} ms; provider requests per tick: first ${requests[0]}, then ${requests[1]}`,
    )
    console.log(
      `[${kind}] the paid invoice with a lost webhook settled on tick ${settledAt ?? 'never'} (one tick = 60 s)`,
    )
    if (settledAt === null || settledAt > 2)
      throw new Error(`${kind}: the paid invoice did not settle within 2 minutes`)
  } finally {
    await h.close()
    await Promise.all([btcpay.stop(), zaprite.stop()])
  }
}

await bench('btcpay')
await bench('zaprite')
