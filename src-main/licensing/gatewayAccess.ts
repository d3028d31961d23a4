/**
 * The buyer's gateway key (issue 45), licensing's side: issued after a purchase commits, shown
 * once on the thank-you page, handed out again (a new secret) with the license key, and following
 * the tier's grant when the tier or the license's tier changes. The gateway holds the key, through
 * `AccessKeys` (platform/); no secret is kept here, only when one was last shown
 * (`licenses.gateway_key_shown_at`). Secrets never reach the audit log, the logs or the outbox:
 * only the key's prefix does.
 */
import type { AccessEntitlements, GatewayKeyResponse } from '../contract/licensing'
import { ApiError } from '../contract/errors'
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import type { AccessGrant, AccessKeys } from '../platform/accessKeys'
import type { AuditLog } from './audit'
import type { LicensingDb } from './db'
import { iso, parseAccess } from './json'
import type { LicenseKeys } from './licenseKeys'
import { expiryOf, type LicenseRow } from './licenseRecords'
import type { Catalog, PolicyRow } from './productCatalog'

export interface GatewayAccessDeps {
  db: LicensingDb
  clock: Clock
  audit: AuditLog
  catalog: Catalog
  keys: LicenseKeys
  logger?: Logger
  /** The gateway's keys; absent: no keys are issued. */
  accessKeys?: AccessKeys
}

/** What the thank-you page shows: a secret now (never again), or when one was shown. */
export type KeyReveal =
  | { kind: 'secret'; secret: string }
  | { kind: 'shown'; at: number }
  /** None could be made now (no gateway, or it failed): the recovery path hands one out later. */
  | { kind: 'unavailable' }

/** A tier's access block as the grant the gateway enforces. */
export function accessGrant(a: AccessEntitlements): AccessGrant {
  return { models: a.models, requestsPerMinute: a.requests_per_minute, concurrentStreams: a.concurrent_streams }
}

const keyName = (licenseId: string): string => `license ${licenseId.slice(0, 8)}`

/** Why a key failed, without its stack (never a secret: the gateway's errors name ids and prefixes). */
const reason = (err: unknown): string => (err instanceof Error ? err.message : String(err))

export class GatewayAccess {
  constructor(private readonly deps: GatewayAccessDeps) {}

  private access(policyId: string | null): AccessEntitlements | null {
    const p = policyId ? this.deps.catalog.policyRow(policyId) : undefined
    return p ? parseAccess(p.access) : null
  }

  private license(id: string): LicenseRow | undefined {
    return this.deps.db.prepare('SELECT * FROM licenses WHERE id = ?').get(id) as LicenseRow | undefined
  }

  private markShown(licenseId: string, at: number | null): void {
    this.deps.db.prepare('UPDATE licenses SET gateway_key_shown_at = ? WHERE id = ?').run(at, licenseId)
  }

  private record(licenseId: string, action: string, details: Record<string, unknown>): void {
    this.deps.audit.record({ actor: 'system', action, targetType: 'license', targetId: licenseId, details })
  }

  private failed(licenseId: string, err: unknown): void {
    const error = reason(err)
    this.record(licenseId, 'license.gateway_key_failed', { error })
    this.deps.logger?.warn('the buyer’s gateway key could not be issued', { license: licenseId, error })
  }

  /**
   * A new key for the license under `policy` (its secret returned once; only its hash is kept by
   * the gateway); null when the tier sells no access or no gateway is wired. Throws when the
   * gateway refuses. Call after the license's transaction commits.
   */
  issue(licenseId: string, policy: PolicyRow, shown: boolean): string | null {
    const access = parseAccess(policy.access)
    if (access === null || !this.deps.accessKeys) return null
    const { secret, prefix } = this.deps.accessKeys.issue(licenseId, keyName(licenseId), accessGrant(access))
    if (shown) this.markShown(licenseId, this.deps.clock.now())
    this.record(licenseId, 'license.gateway_key', { prefix })
    return secret
  }

  /**
   * As issue, after a sale committed: a failure is audited and logged, never thrown (the license
   * stands; the thank-you page or the recovery path makes the key later).
   */
  issueAfterSale(licenseId: string, policy: PolicyRow | undefined, shown: boolean): string | null {
    if (!policy) return null
    try {
      return this.issue(licenseId, policy, shown)
    } catch (err) {
      this.failed(licenseId, err)
      return null
    }
  }

  /** A settled purchase: the key, its secret dropped (the thank-you page's first view shows a new one). */
  afterPurchase(licenseId: string): void {
    const r = this.license(licenseId)
    if (r) this.issueAfterSale(licenseId, r.policy_id ? this.deps.catalog.policyRow(r.policy_id) : undefined, false)
  }

  /** A new secret for the license's key, or a first key when it has none; the old secret stops now. */
  private freshSecret(r: LicenseRow, access: AccessEntitlements): { secret: string; prefix: string } {
    const keys = this.deps.accessKeys
    if (!keys) throw new ApiError('unavailable', 'the gateway is not running here, so no gateway key can be made')
    const k = keys.rotate(r.id) ?? keys.issue(r.id, keyName(r.id), accessGrant(access))
    this.markShown(r.id, this.deps.clock.now())
    this.record(r.id, 'license.gateway_key_rotated', { prefix: k.prefix })
    return k
  }

  /**
   * The thank-you page's view of a settled purchase's license: on the first view a new secret
   * (the key rotated, or issued if it has none), later the time it was shown; null when the tier
   * sells no access or no gateway runs here. Two views at once: one wins the claim, the other
   * reads "shown".
   */
  revealOnce(licenseId: string): KeyReveal | null {
    const r = this.license(licenseId)
    const access = r ? this.access(r.policy_id) : null
    if (!r || access === null || !this.deps.accessKeys) return null
    const now = this.deps.clock.now()
    const claimed =
      this.deps.db
        .prepare('UPDATE licenses SET gateway_key_shown_at = ? WHERE id = ? AND gateway_key_shown_at IS NULL')
        .run(now, licenseId).changes === 1
    if (!claimed) {
      const at = this.deps.db.prepare('SELECT gateway_key_shown_at FROM licenses WHERE id = ?').pluck().get(licenseId)
      return { kind: 'shown', at: typeof at === 'number' ? at : now }
    }
    try {
      return { kind: 'secret', secret: this.freshSecret(r, access).secret }
    } catch (err) {
      this.markShown(licenseId, null) // not shown after all: the next view tries again
      this.failed(licenseId, err)
      return { kind: 'unavailable' }
    }
  }

  /**
   * `POST /v1/gateway-key`: a new secret for the key of the license `keyText` names, when the
   * license stands (active, not past its expiry and grace) and its tier sells access.
   */
  recover(keyText: string): GatewayKeyResponse {
    const { license: r } = this.deps.keys.authenticateActive(keyText)
    const exp = expiryOf(r, this.deps.clock.now())
    if (exp.expired) throw new ApiError('forbidden', `this license expired on ${iso(r.expires_at!)}`)
    const access = this.access(r.policy_id)
    if (access === null) throw new ApiError('forbidden', 'this license’s tier does not include API access')
    const k = this.freshSecret(r, access)
    this.deps.audit.record({
      actor: 'buyer',
      action: 'license.gateway_key_recover',
      targetType: 'license',
      targetId: r.id,
      details: { prefix: k.prefix },
    })
    return {
      ok: true,
      license_id: r.id,
      gateway_key: k.secret,
      key_prefix: k.prefix,
      models: access.models,
      tokens_per_period: access.tokens_per_period,
      requests_per_minute: access.requests_per_minute,
      concurrent_streams: access.concurrent_streams,
    }
  }

  /**
   * The license's tier changed (committed): its key takes the new tier's grant at its next
   * request. A tier without access leaves the key as it is (the license's standing refuses it); a
   * license without a key gets one on the thank-you page or the recovery path. Never throws.
   */
  followTier(licenseId: string): void {
    const r = this.license(licenseId)
    const access = r ? this.access(r.policy_id) : null
    if (access === null || !this.deps.accessKeys) return
    try {
      if (this.deps.accessKeys.setGrant(licenseId, accessGrant(access)))
        this.record(licenseId, 'license.gateway_key_grant', { policy_id: r!.policy_id })
    } catch (err) {
      this.record(licenseId, 'license.gateway_key_grant_failed', { error: reason(err) })
      this.deps.logger?.warn('a gateway key did not follow its tier', { license: licenseId, error: reason(err) })
    }
  }

  /** A tier's access changed (committed): every license on it follows. Returns how many were asked. */
  followPolicy(policyId: string): number {
    const ids = this.deps.db.prepare('SELECT id FROM licenses WHERE policy_id = ?').pluck().all(policyId) as string[]
    for (const id of ids) this.followTier(id)
    return ids.length
  }
}
