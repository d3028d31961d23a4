/**
 * The buyer's gateway key for a license whose tier sells access to the cluster (issue 45).
 * Licensing issues it through this interface and the gateway implements it, so neither domain
 * imports the other; compose.ts wires them.
 */

/** What a key may do: the tier's models (null = all) and limits (null = none). */
export interface AccessGrant {
  readonly models: readonly string[] | null
  readonly requestsPerMinute: number | null
  readonly concurrentStreams: number | null
}

export interface AccessKeys {
  /** A new key bound to the license; its secret is returned once and stored hashed. */
  issue(licenseId: string, name: string, grant: AccessGrant): { secret: string; prefix: string }
  /** A new secret for the license's key (the old one stops working); null when it has none. */
  rotate(licenseId: string): { secret: string; prefix: string } | null
  /** The tier's models or limits changed: the license's key follows. False when it has none. */
  setGrant(licenseId: string, grant: AccessGrant): boolean
  /** Tokens the license's key has used in the period that began at `periodStart`; null when it has no key. */
  tokensUsed(licenseId: string, periodStart: number): number | null
  /** Seconds of audio the license's key has used in that period; null when it has no key. */
  audioSecondsUsed(licenseId: string, periodStart: number): number | null
  /**
   * Tokens per model that each license's key used in the period asked for it, in one call however
   * many licenses (the operator's view); a license whose key used nothing, or has none, is absent.
   */
  periodModels(
    periods: readonly { licenseId: string; periodStart: number }[],
  ): Map<string, readonly AccessModelTokens[]>
}

/** What a license's key used on one model in a period: tokens are prompt + completion. */
export interface AccessModelTokens {
  readonly model: string
  readonly requests: number
  readonly tokens: number
  /** Seconds of audio transcribed or synthesized. */
  readonly audioSeconds: number
}

/** A license's current access period and what its key may spend in it. */
export interface AccessAllowance {
  /** Tokens (prompt + completion) for the period: the tier's quota plus top-ups; null = no quota. */
  readonly tokens: number | null
  /** Of `tokens`, what top-ups added this period. */
  readonly topUpTokens: number
  /** Seconds of audio for the period: the tier's audio minutes × 60; null = no audio quota. */
  readonly audioSeconds: number | null
  readonly periodStart: number
  /** When the quota resets: the period's end (a subscription's renewal due, even while it is late). */
  readonly resetsAt: number
}

/** Which allowance a request spends: audio seconds (speech, transcription), tokens, or none (`/v1/usage`). */
export type QuotaKind = 'tokens' | 'audio'

/** What is left of an allowance (null = no quota); never below zero, as a stream may cross it. */
export function remainingOf(allowed: number | null, used: number): number | null {
  return allowed === null ? null : Math.max(0, allowed - used)
}

/** Null refusal: the key may be used, within `allowance`. Otherwise why not ("is revoked", "expired on …"). */
export type LicenseCheck =
  | { readonly refusal: string; readonly allowance?: undefined }
  | { readonly refusal: null; readonly allowance: AccessAllowance }

/**
 * Whether a license's gateway key may be used now and within what, asked on every request the key
 * makes. Licensing answers, from its database.
 */
export interface LicenseStanding {
  check(licenseId: string): LicenseCheck
}

/**
 * Whether any tier sells access to the cluster (issue 45, "safe on the internet"): while one does,
 * the gateway refuses consumer requests without a key from outside the local network. Asked on
 * such requests, so licensing answers from memory, read again whenever a tier changes.
 */
export interface AccessSales {
  sellsAccess(): boolean
}

/**
 * The answer while licensing is off (its database could not be read): it might sell access, so
 * the gateway acts as if it did. Only keyless requests from outside the LAN are refused by it.
 */
export const ACCESS_SALES_UNKNOWN: AccessSales = { sellsAccess: () => true }
