/**
 * Key authentication for the buyer endpoints: a signed key proves which license the caller holds.
 * Every call a key makes (validate, activate, heartbeat, deactivate) is reported to the validation
 * log from here, so the log sees one shape whichever use case answered.
 */
import { ApiError } from '../contract/errors'
import type { LicensingDb } from './db'
import type { LicensePayload } from './keys/keyFormat'
import type { Issuer } from './keys/issuer'
import type { ClientInfo, LicenseRow } from './licenseRecords'
import type { ValidationKind, ValidationRecorder } from './validationLog'

type KeyCheck = { ok: true; payload: LicensePayload; license: LicenseRow } | { ok: false; reason: string }

export class LicenseKeys {
  private readonly license

  constructor(private readonly deps: { db: LicensingDb; issuer: Issuer; validations?: ValidationRecorder }) {
    // The hot path (validate) reads the license on a prepared statement.
    this.license = deps.db.prepare('SELECT * FROM licenses WHERE id = ?')
  }

  row(id: string): LicenseRow | undefined {
    return this.license.get(id) as LicenseRow | undefined
  }

  /** A verified key and its license, or why not (for the validation log; callers get one answer). */
  check(keyText: string): KeyCheck {
    const v = this.deps.issuer.verify(keyText)
    if (!v.ok) return { ok: false, reason: v.reason }
    const license = this.row(v.payload.licenseId)
    if (!license || license.product_id !== v.payload.productId) return { ok: false, reason: 'not_found' }
    return { ok: true, payload: v.payload, license }
  }

  /** A verified key and its license; any failure is the same 401 so nothing leaks about what exists. */
  authenticate(keyText: string): { payload: LicensePayload; license: LicenseRow } {
    const k = this.check(keyText)
    if (!k.ok) throw new ApiError('unauthorized', 'invalid license key')
    return k
  }

  /**
   * As authenticate, for what a key may still do to its license (quote, upgrade, cancel): a revoked
   * or suspended license's key gets the very same 401, as Keysat answers, so its state does not leak.
   */
  authenticateActive(keyText: string): { payload: LicensePayload; license: LicenseRow } {
    const k = this.check(keyText)
    if (!k.ok || k.license.status !== 'active') throw new ApiError('unauthorized', 'invalid license key')
    return k
  }

  /** One key call and its answer, to the validation log. */
  report(
    kind: ValidationKind,
    keyText: string,
    licenseId: string | null | undefined,
    res: { ok: boolean; reason?: string },
    fingerprintHash: string | null,
    client: ClientInfo,
  ): void {
    this.deps.validations?.record({
      kind,
      licenseId: licenseId ?? null,
      keyText,
      ok: res.ok,
      result: res.ok ? 'ok' : (res.reason ?? 'refused'),
      fingerprintHash,
      clientIp: client.ip,
      userAgent: client.userAgent,
    })
  }
}
