import { randomUUID } from 'node:crypto'
import type { LicensingServices } from '../../src-main/licensing/licensingServices'

/**
 * Fills a licensing database for list tests and the admin-list bench: complimentary licences
 * issued through the real service (signed, audited), and invoices and subscriptions for them
 * written as rows, one minute apart on the services' clock.
 */
export function seedLicensing(
  s: LicensingServices,
  opts: { licenses: number; products?: { slug: string; name: string }[]; advance?: (ms: number) => void },
): { productIds: string[]; licenseIds: string[] } {
  const products = (opts.products ?? [{ slug: 'notes', name: 'Field Notes' }]).map((p) =>
    s.catalog.createProduct({
      slug: p.slug,
      name: p.name,
      description: '',
      price_currency: 'SAT',
      price_value: 10_000,
      entitlements_catalog: [],
      active: true,
    }),
  )
  const licenseIds: string[] = []
  const now = () => s.deps.clock.now()
  const insertInvoice = s.db.prepare(
    `INSERT INTO invoices (id, kind, product_id, policy_id, provider, amount_sats, status, buyer_email, issued_license_id,
       created_at, updated_at, settled_at, listed_currency, listed_value)
     VALUES (?, 'purchase', ?, ?, 'btcpay', ?, ?, ?, ?, ?, ?, ?, 'SAT', ?)`,
  )
  const insertSub = s.db.prepare(
    `INSERT INTO subscriptions (id, license_id, policy_id, status, listed_currency, listed_value, period_days,
       next_renewal_at, created_at, updated_at) VALUES (?, ?, ?, ?, 'SAT', ?, 30, ?, ?, ?)`,
  )
  s.db.transaction(() => {
    for (let i = 0; i < opts.licenses; i++) {
      const product = products[i % products.length]!
      const email = `buyer${String(i).padStart(5, '0')}@example.com`
      const { license } = s.licenses.issuing.issueComplimentary({ productId: product.id, buyerEmail: email })
      licenseIds.push(license.id)
      const amount = 1000 + ((i * 7919) % 9000)
      const settled = i % 3 !== 0
      const t = now()
      insertInvoice.run(
        randomUUID(),
        product.id,
        license.policy_id,
        amount,
        settled ? 'settled' : 'pending',
        email,
        settled ? license.id : null,
        t,
        t,
        settled ? t : null,
        amount,
      )
      if (i % 2 === 0)
        insertSub.run(
          randomUUID(),
          license.id,
          license.policy_id,
          i % 4 === 0 ? 'active' : 'cancelled',
          amount,
          t + 30 * 86_400_000,
          t,
          t,
        )
      opts.advance?.(60_000)
    }
  })()
  return { productIds: products.map((p) => p.id), licenseIds }
}
