/**
 * Validate: is this key good for this product (and this machine) right now? Answered from the
 * license's current row, not what the key was signed with; a fingerprint takes or refreshes a seat.
 */
import type { ValidateInput, ValidateResponse } from '../contract/licensing'
import type { Clock } from '../lib/clock'
import type { AccessQuotas } from './accessQuotas'
import type { LicensingDb } from './db'
import { iso, parseStringList } from './json'
import { hashFingerprint, isFingerprintBound, type LicensePayload } from './keys/keyFormat'
import type { Issuer } from './keys/issuer'
import type { LicenseKeys } from './licenseKeys'
import { expiryOf, type ClientInfo, type Expiry, type LicenseRow } from './licenseRecords'
import type { MachineSeats } from './machineSeats'

/** Validate's answer for a license in good standing: its current state, not the key's. */
function validAnswer(r: LicenseRow, slug: string, exp: Expiry, machineId: string | undefined): ValidateResponse {
  const res: ValidateResponse = {
    ok: true,
    license_id: r.id,
    product_id: r.product_id,
    product_slug: slug,
    issued_at: iso(r.issued_at),
    is_trial: r.is_trial === 1,
    entitlements: parseStringList(r.entitlements),
    status: r.status,
    max_machines: r.max_machines,
  }
  if (r.expires_at !== null) res.expires_at = iso(r.expires_at)
  if (exp.inGrace) {
    res.in_grace_period = true
    res.grace_until = iso(exp.graceUntil!)
  }
  if (machineId !== undefined) res.machine_id = machineId
  return res
}

export class LicenseValidation {
  private readonly productSlug

  constructor(
    private readonly deps: {
      db: LicensingDb
      clock: Clock
      issuer: Issuer
      keys: LicenseKeys
      seats: MachineSeats
      /** An access license's tokens this period, reported as `access`. */
      quotas?: AccessQuotas
    },
  ) {
    this.productSlug = deps.db.prepare('SELECT slug FROM products WHERE id = ?').pluck()
  }

  validate(input: ValidateInput, client: ClientInfo = {}): ValidateResponse {
    const fp = input.fingerprint ? hashFingerprint(input.fingerprint) : null
    const res = this.check(input, fp, client.ip)
    this.deps.keys.report('validate', input.key, res.license_id, res, fp ? fp.toString('hex') : null, client)
    return res
  }

  private check(input: ValidateInput, fp: Buffer | null, clientIp?: string): ValidateResponse {
    const productSlug = input.product_slug ?? undefined
    const v = this.deps.issuer.verify(input.key)
    if (!v.ok) return { ok: false, reason: v.reason }
    const r = this.deps.keys.row(v.payload.licenseId)
    if (!r || r.product_id !== v.payload.productId) return { ok: false, reason: 'not_found' }
    if (r.status !== 'active') return { ok: false, reason: r.status, license_id: r.id, status: r.status }
    const slug = this.productSlug.get(r.product_id) as string
    if (productSlug !== undefined && productSlug !== slug)
      return { ok: false, reason: 'product_mismatch', license_id: r.id }
    const exp = expiryOf(r, this.deps.clock.now())
    if (exp.expired)
      return {
        ok: false,
        reason: 'expired',
        license_id: r.id,
        product_id: r.product_id,
        expires_at: iso(r.expires_at!),
        grace_until: iso(exp.graceUntil!),
      }
    const seat = fp === null ? null : this.validateSeat(r, v.payload, fp, input, clientIp)
    if (seat && !seat.ok) return seat.refusal
    return this.withAccess(validAnswer(r, slug, exp, seat?.machineId))
  }

  /** A license whose tier sells access reports its tokens this period. */
  private withAccess(res: ValidateResponse): ValidateResponse {
    const access = res.license_id === undefined ? null : (this.deps.quotas?.quota(res.license_id) ?? null)
    if (access !== null) res.access = access
    return res
  }

  /**
   * Validate's seat for the caller's fingerprint: a key signed for another machine is refused
   * before any seat is taken.
   */
  private validateSeat(
    r: LicenseRow,
    payload: LicensePayload,
    fp: Buffer,
    input: ValidateInput,
    clientIp: string | undefined,
  ): { ok: true; machineId: string } | { ok: false; refusal: ValidateResponse } {
    if (isFingerprintBound(payload) && !fp.equals(payload.fingerprintHash))
      return { ok: false, refusal: { ok: false, reason: 'fingerprint_mismatch', license_id: r.id } }
    const s = this.deps.seats.seat(r, fp.toString('hex'), {
      hostname: input.hostname ?? undefined,
      platform: input.platform ?? undefined,
      ip: clientIp,
    })
    if (!s.ok)
      return {
        ok: false,
        refusal: {
          ok: false,
          reason: s.reason,
          license_id: r.id,
          product_id: r.product_id,
          max_machines: r.max_machines,
        },
      }
    return { ok: true, machineId: s.machineId }
  }
}
