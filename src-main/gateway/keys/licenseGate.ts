import { ApiError } from '../../contract/errors'
import type { KeyPeriodUsage } from '../../contract/gateway'
import { remainingOf, type AccessAllowance, type LicenseStanding, type QuotaKind } from '../../platform/accessKeys'
import type { PeriodUsage } from './periodUsage'

/**
 * The gate a license's gateway key passes on every request (issue 45): licensing says whether the
 * license stands and what its period allows; the key's usage this period says whether tokens (or,
 * for speech and transcription, audio seconds) are left. Only the start of a request is checked,
 * so a stream that crosses the quota finishes and its overage is counted; the next request is
 * refused.
 */
export class LicenseGate {
  /** Licensing's answer; until it is wired, license keys are refused (fail closed). */
  private standing: LicenseStanding | null = null

  constructor(readonly periods: PeriodUsage | null) {}

  follow(standing: LicenseStanding | null): void {
    this.standing = standing
  }

  /** What the license allows now, or why it no longer works (403). */
  allowance(keyName: string, licenseId: string): AccessAllowance {
    const checked = this.standing?.check(licenseId) ?? { refusal: 'cannot be checked now (licensing is off)' }
    if (checked.refusal !== null)
      throw new ApiError('forbidden', `key '${keyName}' no longer works: its license ${checked.refusal}`)
    return checked.allowance
  }

  /** Tokens the key has used in the period that began at `periodStart`. */
  used(keyId: string, periodStart: number): number {
    return this.periods?.tokens(keyId, periodStart) ?? 0
  }

  /** Seconds of audio the key has used in the period that began at `periodStart`. */
  audioUsed(keyId: string, periodStart: number): number {
    return this.periods?.audioSeconds(keyId, periodStart) ?? 0
  }

  /** The key's period as the buyer sees it: tokens and audio seconds allowed, used and left, per model. */
  usage(keyName: string, keyId: string, licenseId: string): KeyPeriodUsage {
    const a = this.allowance(keyName, licenseId)
    const used = this.used(keyId, a.periodStart)
    const audio = this.audioUsed(keyId, a.periodStart)
    return {
      object: 'usage',
      license_id: licenseId,
      period_start: new Date(a.periodStart).toISOString(),
      resets_at: new Date(a.resetsAt).toISOString(),
      tokens: { allowed: a.tokens, used, remaining: remainingOf(a.tokens, used) },
      audio_seconds: { allowed: a.audioSeconds, used: audio, remaining: remainingOf(a.audioSeconds, audio) },
      models: this.periods?.models(keyId, a.periodStart) ?? [],
    }
  }

  /**
   * 403 when the license no longer stands; 429 `insufficient_quota` (OpenAI's code, with
   * `x-should-retry: false` so its clients do not retry) once the period's allowance the request
   * spends (`quota`: tokens, or audio seconds for speech and transcription) is used up.
   */
  admit(keyName: string, keyId: string, licenseId: string, quota: QuotaKind | null = 'tokens'): AccessAllowance {
    const a = this.allowance(keyName, licenseId)
    const allowed = quota === 'audio' ? a.audioSeconds : quota === 'tokens' ? a.tokens : null
    if (allowed === null) return a
    const used = quota === 'audio' ? this.audioUsed(keyId, a.periodStart) : this.used(keyId, a.periodStart)
    if (used >= allowed) {
      const spent =
        quota === 'audio'
          ? `${allowed / 60} audio minute${allowed === 60 ? '' : 's'} for this period (${Math.round(used)} s counted)`
          : `${allowed} tokens for this period (${used} counted)`
      throw new ApiError(
        'insufficient_quota',
        `key '${keyName}' has used its ${spent}; the quota resets at ${new Date(a.resetsAt).toISOString()}`,
        { status: 429, headers: { 'x-should-retry': 'false' } },
      )
    }
    return a
  }
}
