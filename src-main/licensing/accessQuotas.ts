/**
 * An access license's tokens and audio seconds (issue 45): what its tier and this period's top-ups allow, what its
 * gateway key has used (the gateway counts, through AccessKeys), and top-ups an operator grants or
 * a buyer pays for. The gateway enforces the same allowance on each request (LicenseStanding).
 */
import { randomUUID } from 'node:crypto'
import type { AccessQuota } from '../contract/licensing'
import { ApiError } from '../contract/errors'
import type { Clock } from '../lib/clock'
import { remainingOf, type AccessKeys, type LicenseStanding } from '../platform/accessKeys'
import type { AuditLog } from './audit'
import type { LicensingDb } from './db'
import { iso } from './json'

export interface AccessQuotaDeps {
  db: LicensingDb
  clock: Clock
  audit: AuditLog
  standing: LicenseStanding
  /** The gateway's side: a license key's usage. Absent: usage reads as zero. */
  accessKeys?: AccessKeys
}

export class AccessQuotas {
  private readonly insertTopUp

  constructor(private readonly deps: AccessQuotaDeps) {
    // A paid top-up's invoice_id is unique: the same invoice settled again adds nothing.
    this.insertTopUp = deps.db.prepare(
      `INSERT INTO access_top_ups (id, license_id, tokens, source, invoice_id, created_at)
       VALUES (@id, @license_id, @tokens, @source, @invoice_id, @created_at) ON CONFLICT (invoice_id) DO NOTHING`,
    )
  }

  /** The license's tokens now; null when it does not stand or its tier sells no access. */
  quota(licenseId: string): AccessQuota | null {
    const checked = this.deps.standing.check(licenseId)
    if (checked.refusal !== null) return null
    const a = checked.allowance
    const used = this.deps.accessKeys?.tokensUsed(licenseId, a.periodStart) ?? 0
    const audio = this.deps.accessKeys?.audioSecondsUsed(licenseId, a.periodStart) ?? 0
    return {
      tokens_per_period: a.tokens === null ? null : a.tokens - a.topUpTokens,
      top_up_tokens: a.topUpTokens,
      tokens_used: used,
      tokens_remaining: remainingOf(a.tokens, used),
      audio_minutes_per_period: a.audioSeconds === null ? null : a.audioSeconds / 60,
      audio_seconds_used: audio,
      audio_seconds_remaining: remainingOf(a.audioSeconds, audio),
      period_start: iso(a.periodStart),
      resets_at: iso(a.resetsAt),
    }
  }

  /**
   * Adds `tokens` to the license's current period: works at once, even over quota (the gateway
   * reads the allowance on the next request). Only a standing license on a tier with a token
   * quota takes a top-up.
   */
  addTopUp(a: { licenseId: string; tokens: number; source: 'admin' | 'paid'; invoiceId?: string | null }): AccessQuota {
    const before = this.quota(a.licenseId)
    if (before === null)
      throw new ApiError('conflict', `license ${a.licenseId} does not stand on a tier that sells access`)
    if (before.tokens_per_period === null)
      throw new ApiError('conflict', `license ${a.licenseId}'s tier has no token quota to top up`)
    this.record({ ...a, invoiceId: a.invoiceId ?? null, at: this.deps.clock.now() })
    return this.quota(a.licenseId)!
  }

  /**
   * A bought top-up, inside its invoice's settlement: counts in the period `at` (the settlement)
   * falls in. Recorded even when the license stopped standing since the invoice opened (it was
   * paid for, and counts should it stand again this period). False when this invoice's top-up was
   * recorded already.
   */
  addPaidTopUp(a: { licenseId: string; tokens: number; invoiceId: string; at: number }): boolean {
    return this.record({ ...a, source: 'paid' })
  }

  private record(a: {
    licenseId: string
    tokens: number
    source: 'admin' | 'paid'
    invoiceId: string | null
    at: number
  }): boolean {
    const added =
      this.insertTopUp.run({
        id: randomUUID(),
        license_id: a.licenseId,
        tokens: a.tokens,
        source: a.source,
        invoice_id: a.invoiceId,
        created_at: a.at,
      }).changes === 1
    if (!added) return false
    this.deps.audit.record({
      actor: a.source === 'admin' ? 'admin' : 'system',
      action: 'license.top_up',
      targetType: 'license',
      targetId: a.licenseId,
      details: { tokens: a.tokens, source: a.source, invoice_id: a.invoiceId },
    })
    return true
  }
}
