/**
 * Issuing licenses: under a policy (paid, redeemed or complimentary), each with a signed v2 key,
 * and a fresh key for a license as it stands now.
 */
import { randomUUID } from 'node:crypto'
import type { LicenseView } from '../contract/licensing'
import { ApiError } from '../contract/errors'
import type { Clock } from '../lib/clock'
import type { AuditLog } from './audit'
import { immediate, type LicensingDb } from './db'
import { iso, parseStringList } from './json'
import { CURRENT_KEY_VERSION, FLAG_TRIAL, type LicensePayload } from './keys/keyFormat'
import type { Issuer } from './keys/issuer'
import { DAY_MS, licenseView, type LicenseRow } from './licenseRecords'
import type { GatewayAccess } from './gatewayAccess'
import { emitEvent } from './outboundEvents'
import type { Catalog, PolicyRow, ProductRow } from './productCatalog'
import type { EventOutbox } from './settlement'

const ZERO_HASH = Buffer.alloc(32)

export interface IssuingDeps {
  db: LicensingDb
  clock: Clock
  audit: AuditLog
  catalog: Catalog
  issuer: Issuer
  outbox: EventOutbox
  /** The buyer's gateway key for a tier that sells access. */
  access: GatewayAccess
}

export class LicenseIssuing {
  constructor(private readonly deps: IssuingDeps) {}

  /** The v2 payload for a license as it stands now (current entitlements and expiry). */
  private payloadFor(r: LicenseRow): LicensePayload {
    return {
      version: CURRENT_KEY_VERSION,
      flags: r.is_trial === 1 ? FLAG_TRIAL : 0,
      productId: r.product_id,
      licenseId: r.id,
      issuedAt: Math.floor(r.issued_at / 1000),
      expiresAt: r.expires_at === null ? 0 : Math.floor(r.expires_at / 1000),
      fingerprintHash: ZERO_HASH,
      entitlements: parseStringList(r.entitlements),
    }
  }

  freshKey(r: LicenseRow): string {
    return this.deps.issuer.sign(this.payloadFor(r))
  }

  /**
   * Issues a license under a policy: copies its entitlements, machine limit, grace and trial
   * flag, sets the expiry from its duration, signs a v2 key. Call inside a transaction when it
   * goes with other writes (settlement); `invoiceId` is unique across licenses.
   */
  issue(a: {
    product: ProductRow
    policy: PolicyRow
    source: LicenseRow['source']
    invoiceId?: string | null
    buyerEmail?: string | null
    buyerNote?: string | null
  }): { license: LicenseRow; key: string } {
    const now = this.deps.clock.now()
    const row: LicenseRow = {
      id: randomUUID(),
      product_id: a.product.id,
      policy_id: a.policy.id,
      invoice_id: a.invoiceId ?? null,
      status: 'active',
      status_reason: null,
      source: a.source,
      license_key: '',
      issued_at: now,
      expires_at: a.policy.duration_days > 0 ? now + a.policy.duration_days * DAY_MS : null,
      grace_period_days: a.policy.grace_period_days,
      max_machines: a.policy.max_machines,
      entitlements: JSON.stringify(parseStringList(a.policy.entitlements)),
      is_trial: a.policy.is_trial,
      fingerprint_hash: null,
      buyer_email: a.buyerEmail ?? null,
      buyer_note: a.buyerNote ?? null,
      updated_at: now,
    }
    row.license_key = this.freshKey(row)
    this.deps.db
      .prepare(
        `INSERT INTO licenses (id, product_id, policy_id, invoice_id, status, source, license_key, issued_at, expires_at,
           grace_period_days, max_machines, entitlements, is_trial, buyer_email, buyer_note, updated_at)
         VALUES (@id, @product_id, @policy_id, @invoice_id, @status, @source, @license_key, @issued_at, @expires_at,
           @grace_period_days, @max_machines, @entitlements, @is_trial, @buyer_email, @buyer_note, @updated_at)`,
      )
      .run(row)
    this.deps.audit.record({
      actor: a.source === 'complimentary' ? 'admin' : a.source === 'redeem' ? 'buyer' : 'system',
      action: 'license.issue',
      targetType: 'license',
      targetId: row.id,
      details: { product: a.product.slug, policy: a.policy.slug, source: a.source, invoice_id: row.invoice_id },
    })
    this.announceIssued(row, now)
    return { license: row, key: row.license_key }
  }

  /** license.issued for every source (paid, free redemption, admin comp), in the issuing transaction. */
  private announceIssued(row: LicenseRow, now: number): void {
    const inv = row.invoice_id
      ? (this.deps.db
          .prepare('SELECT amount_sats, listed_currency, listed_value FROM invoices WHERE id = ?')
          .get(row.invoice_id) as
          { amount_sats: number; listed_currency: string | null; listed_value: number | null } | undefined)
      : undefined
    emitEvent(
      this.deps.outbox,
      'license.issued',
      {
        license_id: row.id,
        product_id: row.product_id,
        policy_id: row.policy_id,
        source: row.source,
        invoice_id: row.invoice_id,
        amount_sats: inv?.amount_sats ?? 0,
        listed_currency: inv?.listed_currency ?? null,
        listed_value: inv?.listed_value ?? null,
        buyer_email: row.buyer_email,
        expires_at: row.expires_at === null ? null : iso(row.expires_at),
      },
      now,
    )
  }

  /** An admin's gift: a license under the product's default policy, or the one named. */
  issueComplimentary(a: {
    productId: string
    policyId?: string | null
    buyerEmail?: string | null
    buyerNote?: string | null
  }): {
    license: LicenseView
    license_key: string
    gateway_key: string | null
  } {
    const { catalog, db } = this.deps
    const product = catalog.productRow(a.productId)
    if (!product) throw new ApiError('not_found', `no product ${a.productId}`)
    let policy: PolicyRow
    if (a.policyId) {
      const p = catalog.policyRow(a.policyId)
      if (!p || p.product_id !== product.id)
        throw new ApiError('not_found', `product ${product.slug} has no policy ${a.policyId}`)
      policy = p
    } else policy = catalog.resolvePolicy(product)
    const { license, key } = immediate(db, () =>
      this.issue({ product, policy, source: 'complimentary', buyerEmail: a.buyerEmail, buyerNote: a.buyerNote }),
    )
    const gatewayKey = this.grantAccess(license.id, policy)
    return { license: licenseView(db, license.id), license_key: key, gateway_key: gatewayKey }
  }

  /**
   * The buyer's gateway key when the license's tier sells access: its secret, shown once (only
   * its hash is kept). Called after the license's transaction commits, so a license rolled back
   * never has a key. Null when the tier sells no access or no gateway is wired.
   */
  grantAccess(licenseId: string, policy: PolicyRow): string | null {
    return this.deps.access.issue(licenseId, policy, true)
  }
}
