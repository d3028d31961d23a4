/** Redeeming a free_license code: a settled zero-sats invoice, one license, one redemption, in one transaction. */
import { randomUUID } from 'node:crypto'
import { ApiError } from '../contract/errors'
import type { Clock } from '../lib/clock'
import type { AuditLog } from './audit'
import { immediate, type LicensingDb } from './db'
import type { Discounts } from './discounts'
import type { GatewayAccess } from './gatewayAccess'
import type { LicenseIssuing } from './licenseIssuing'
import type { Catalog } from './productCatalog'

export class FreeLicenseRedeem {
  constructor(
    private readonly deps: {
      db: LicensingDb
      clock: Clock
      audit: AuditLog
      catalog: Catalog
      discounts: Discounts
      issuing: LicenseIssuing
      access: GatewayAccess
    },
  ) {}

  redeem(a: {
    product: string
    code: string
    policy?: string | null
    buyerEmail?: string | null
    buyerNote?: string | null
  }): {
    license_id: string
    license_key: string
    invoice_id: string
    redemption_id: string
    gateway_key: string | null
  } {
    const { catalog, discounts, db } = this.deps
    const product = catalog.productBySlug(a.product)
    if (!product || product.active !== 1) throw new ApiError('not_found', `no product ${a.product}`)
    const policy = catalog.resolvePolicy(product, a.policy)
    if (policy.public !== 1) throw new ApiError('not_found', `product ${product.slug} has no tier ${policy.slug}`)
    const pre = discounts.check(a.code, product, policy)
    if (pre.kind !== 'free_license')
      throw new ApiError(
        'discount_wrong_kind',
        `code ${pre.code} is a discount, not a free license: use it at checkout`,
        { status: 400 },
      )
    const redeemed = immediate(db, () => {
      const d = discounts.check(a.code, product, policy) // again, under the write lock: the cap is exact
      const now = this.deps.clock.now()
      const invoiceId = randomUUID()
      db.prepare(
        `INSERT INTO invoices (id, kind, product_id, policy_id, provider, amount_sats, status, discount_code_id, discount_value,
             buyer_email, buyer_note, created_at, updated_at, settled_at)
           VALUES (?, 'redeem', ?, ?, 'free', 0, 'settled', ?, NULL, ?, ?, ?, ?, ?)`,
      ).run(invoiceId, product.id, policy.id, d.id, a.buyerEmail ?? null, a.buyerNote ?? null, now, now, now)
      const { license, key } = this.deps.issuing.issue({
        product,
        policy,
        source: 'redeem',
        invoiceId,
        buyerEmail: a.buyerEmail,
        buyerNote: a.buyerNote,
      })
      db.prepare('UPDATE invoices SET issued_license_id = ? WHERE id = ?').run(license.id, invoiceId)
      const redemptionId = discounts.reserve({
        codeId: d.id,
        invoiceId,
        listedCurrency: 'SAT',
        discountValue: 0,
        buyerEmail: a.buyerEmail,
        status: 'redeemed',
        licenseId: license.id,
      })
      this.deps.audit.record({
        actor: 'buyer',
        action: 'discount.redeem',
        targetType: 'discount_code',
        targetId: d.id,
        details: { license_id: license.id, invoice_id: invoiceId },
      })
      return { license_id: license.id, license_key: key, invoice_id: invoiceId, redemption_id: redemptionId }
    })
    // After the commit (the gateway's database is another): the answer that carries the license key shows it.
    const gatewayKey = this.deps.access.issueAfterSale(redeemed.license_id, policy, true)
    return { ...redeemed, gateway_key: gatewayKey }
  }
}
