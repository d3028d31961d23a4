/**
 * Recovering a lost key: by the key itself (a fresh one, signed with the license as it stands) or,
 * by invoice, a buyer who lost the key proves the purchase with the invoice id and the
 * e-mail given at checkout. The addresses are compared in constant time after normalising (trim,
 * NFC, lower case), and every failure — unknown invoice, wrong e-mail, no e-mail on the invoice,
 * not paid yet — is the same 404, so the answer says nothing about which invoices exist.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { RecoverResponse } from '../contract/licensing'
import type { AccessQuotas } from './accessQuotas'
import { ApiError } from '../contract/errors'
import type { Clock } from '../lib/clock'
import type { AuditLog } from './audit'
import type { LicensingDb } from './db'
import { iso } from './json'
import type { LicenseIssuing } from './licenseIssuing'
import type { LicenseKeys } from './licenseKeys'
import { expiryOf, licenseView, type LicenseRow } from './licenseRecords'
import type { Catalog } from './productCatalog'

export class LicenseRecovery {
  constructor(
    private readonly deps: {
      db: LicensingDb
      clock: Clock
      audit: AuditLog
      catalog: Catalog
      keys: LicenseKeys
      issuing: LicenseIssuing
      /** An access license's tokens this period, shown to the buyer with the license. */
      quotas?: AccessQuotas
    },
  ) {}

  recover(keyText: string): RecoverResponse {
    return this.recoverLicense(this.deps.keys.authenticate(keyText).license, 'key')
  }

  /** The recover answer for a license the caller has proved they hold (by its key, or its invoice and e-mail). */
  recoverLicense(r: LicenseRow, via: 'key' | 'invoice_email'): RecoverResponse {
    const v = licenseView(this.deps.db, r.id)
    const exp = expiryOf(r, this.deps.clock.now())
    this.deps.audit.record({
      actor: 'buyer',
      action: 'license.recover',
      targetType: 'license',
      targetId: r.id,
      details: { via },
    })
    const policy = r.policy_id ? this.deps.catalog.policyRow(r.policy_id) : undefined
    return {
      ok: true,
      license_id: r.id,
      license_key: r.status === 'revoked' ? null : this.deps.issuing.freshKey(r),
      product_id: r.product_id,
      product_slug: v.product_slug,
      product_name: v.product_name,
      policy_slug: v.policy_slug,
      policy_name: policy?.name ?? null,
      status: r.status,
      issued_at: iso(r.issued_at),
      expires_at: r.expires_at === null ? null : iso(r.expires_at),
      grace_until: exp.graceUntil === null ? null : iso(exp.graceUntil),
      is_trial: r.is_trial === 1,
      entitlements: v.entitlements,
      max_machines: r.max_machines,
      active_machines: v.active_machines,
      access: this.deps.quotas?.quota(r.id) ?? null,
    }
  }
}

export function normaliseEmail(email: string): string {
  return email.trim().normalize('NFC').toLowerCase()
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest()

/** Equal normalised addresses, compared over fixed-length digests so the time does not depend on the text. */
export function sameEmail(given: string, stored: string | null): boolean {
  const a = digest(normaliseEmail(given))
  const b = digest(stored === null ? '\u0000no e-mail' : normaliseEmail(stored))
  return timingSafeEqual(a, b) && stored !== null
}

const NO_MATCH = 'no paid purchase matches that invoice id and e-mail address'

export function recoverByInvoice(
  deps: { db: LicensingDb; licenses: { recovery: LicenseRecovery } },
  invoiceId: string,
  email: string,
): RecoverResponse {
  const inv = deps.db
    .prepare('SELECT buyer_email, status, issued_license_id FROM invoices WHERE id = ?')
    .get(invoiceId) as { buyer_email: string | null; status: string; issued_license_id: string | null } | undefined
  // Compare even when the invoice is unknown, so both failures take the same path.
  const matches = sameEmail(email, inv?.buyer_email ?? null)
  const license =
    inv && matches && inv.issued_license_id
      ? (deps.db.prepare('SELECT * FROM licenses WHERE id = ?').get(inv.issued_license_id) as LicenseRow | undefined)
      : undefined
  if (!license) throw new ApiError('not_found', NO_MATCH)
  return deps.licenses.recovery.recoverLicense(license, 'invoice_email')
}
