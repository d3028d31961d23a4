/**
 * Recover by invoice: a buyer who lost the key proves the purchase with the invoice id and the
 * e-mail given at checkout. The addresses are compared in constant time after normalising (trim,
 * NFC, lower case), and every failure — unknown invoice, wrong e-mail, no e-mail on the invoice,
 * not paid yet — is the same 404, so the answer says nothing about which invoices exist.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { RecoverResponse } from '../contract/licensing'
import { ApiError } from '../contract/errors'
import type { LicensingDb } from './db'
import type { LicenseRow, Licenses } from './licenses'

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
  deps: { db: LicensingDb; licenses: Licenses },
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
  return deps.licenses.recoverLicense(license, 'invoice_email')
}
