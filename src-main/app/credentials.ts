import { ApiError } from '../contract/errors'
import type { AccessSales, QuotaKind } from '../platform/accessKeys'
import type { ConsumerIdentity } from '../platform/callerIdentity'
import { ADMIN_TOKEN_FIX, secretEquals } from './adminToken'
import { rateLimitedError, type Limits } from '../platform/limits'
import type { Logger } from '../lib/logger'

/** Named consumer keys (gateway/keys/consumerKeyStore.ts): who a secret is, and admission of its requests. */
export interface NamedConsumerKeys {
  readonly required: boolean
  identify(secret: string): (ConsumerIdentity & { kind: 'key' }) | null
  /** The secret is shaped like a named key's (`tdm_…`), whether or not it is one now. */
  claims(secret: string): boolean
  /** Throws 429 over the key's rate or concurrency; returns the release for when the request ends. */
  admit(who: ConsumerIdentity & { kind: 'key' }, quota?: QuotaKind | null): () => void
}

const LEGACY: ConsumerIdentity = { kind: 'legacy' }

/**
 * Every credential Tandem accepts: the admin token (login body or Bearer) and the consumer API
 * keys. Each failure, whichever surface it came through, spends from the one `credential`
 * limiter of its address; an address that has spent it has every failure refused with 429 until
 * it refills, so guessing through one door does not leave another open. A correct credential is
 * admitted all the same: an address is often shared (an IPv6 /64, a proxy), and the operator on
 * it must not be locked out by someone else's guesses; the secrets are long enough that the
 * limiter bounds the cost and noise of guessing rather than being its only defence.
 */
export class Credentials {
  constructor(
    private readonly opts: {
      /** Null when the admin-token file was rejected: then no admin credential is accepted. */
      adminToken: string | null
      consumerKeys: readonly string[]
      namedKeys?: NamedConsumerKeys
      /** METRICS_TOKEN: a bearer that may read /metrics and nothing else. */
      metricsToken?: string | null
      /** Licensing's answer to whether a tier sells access (or followSales); absent: none does. */
      accessSales?: AccessSales
      limits: Limits
      logger: Logger
    },
  ) {
    this.sales = opts.accessSales ?? null
  }

  /** Licensing's answer, wired once licensing is built (compose.ts). */
  private sales: AccessSales | null

  followSales(sales: AccessSales): void {
    this.sales = sales
  }

  get consumerKeysRequired(): boolean {
    return this.opts.consumerKeys.length > 0 || (this.opts.namedKeys?.required ?? false)
  }

  /** While a tier sells access, a consumer request without a key from outside the LAN is refused. */
  sellsAccess(): boolean {
    return this.sales?.sellsAccess() ?? false
  }

  /** The 429 for an address that has used up its failed credentials, or null. */
  lockout(limitKey: string): ApiError | null {
    const state = this.opts.limits.peek('credential', limitKey)
    return state.ok
      ? null
      : rateLimitedError(state, `too many failed credentials from this address; try again in ${state.retryAfterS} s`)
  }

  isAdminToken(candidate: string): boolean {
    return this.opts.adminToken !== null && secretEquals(candidate, this.opts.adminToken)
  }

  /**
   * The 401 for every admin call while the admin-token file is rejected (it says so, without the
   * token or the reason, which are in the daemon's log); null when there is a token.
   */
  adminUnavailable(): ApiError | null {
    if (this.opts.adminToken !== null) return null
    return new ApiError(
      'unauthorized',
      'the admin token file on the server is invalid (the daemon log says why), so no admin login or bearer token ' +
        `is accepted; the operator sets a new one with \`${ADMIN_TOKEN_FIX}\` and restarts Tandem`,
    )
  }

  isConsumerKey(candidate: string): boolean {
    // Every key is compared, so the time taken does not tell which one nearly matched.
    let ok = false
    for (const k of this.opts.consumerKeys) ok = secretEquals(candidate, k) || ok
    return ok
  }

  /** The bearer is shaped like a named key: a client that sends one means it, so it is checked even where none is needed. */
  claimsNamedKey(candidate: string): boolean {
    return this.opts.namedKeys?.claims(candidate) ?? false
  }

  /** Who a consumer bearer key belongs to: a named key, a legacy CONSUMER_API_KEYS entry, or null (wrong, disabled, expired). */
  consumerIdentity(candidate: string): ConsumerIdentity | null {
    const named = this.opts.namedKeys?.identify(candidate)
    if (named) return named
    return this.isConsumerKey(candidate) ? LEGACY : null
  }

  /**
   * Admits one request of a named key (429 over its limits; also once the license's allowance
   * `quota` names is spent); the returned release ends it.
   */
  admitConsumer(who: ConsumerIdentity, quota: QuotaKind | null = 'tokens'): () => void {
    return who.kind === 'key' && this.opts.namedKeys ? this.opts.namedKeys.admit(who, quota) : () => undefined
  }

  isMetricsToken(candidate: string): boolean {
    const t = this.opts.metricsToken
    return typeof t === 'string' && t.length > 0 && secretEquals(candidate, t)
  }

  /** Counts a wrong credential against the address. */
  failed(
    limitKey: string,
    what: 'login' | 'admin bearer token' | 'consumer key' | 'metrics token',
    clientIp: string,
  ): void {
    this.opts.limits.take('credential', limitKey)
    this.opts.logger.warn(`failed ${what}`, { from: clientIp })
  }

  /**
   * The login body's token. The right one logs in even while the address is locked out, as a
   * Bearer would be admitted (a lockout here alone would guard nothing, and would keep the operator
   * out while someone on the same address guesses); a wrong one is 429 while locked out, else 401,
   * counted. A login does not refill the address's limiter: whoever shares the address keeps
   * its failures. While the admin-token file is rejected every login is a 401 that says so.
   */
  verifyLogin(token: string, limitKey: string, clientIp: string): void {
    const unavailable = this.adminUnavailable()
    if (unavailable) throw unavailable
    if (this.isAdminToken(token)) return
    const locked = this.lockout(limitKey)
    if (locked) throw locked
    this.failed(limitKey, 'login', clientIp)
    throw new ApiError('unauthorized', 'wrong admin token')
  }
}
