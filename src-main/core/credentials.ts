import { ApiError } from '../contract/errors'
import type { ConsumerIdentity } from '../gateway/consumerKeys'
import { secretEquals } from './adminToken'
import { rateLimitedError, type Limits } from './limits'
import type { Logger } from './logger'

/** Named consumer keys (gateway/consumerKeys.ts): who a secret is, and admission of its requests. */
export interface NamedConsumerKeys {
  readonly required: boolean
  identify(secret: string): (ConsumerIdentity & { kind: 'key' }) | null
  /** Throws 429 over the key's rate or concurrency; returns the release for when the request ends. */
  admit(who: ConsumerIdentity & { kind: 'key' }): () => void
}

const LEGACY: ConsumerIdentity = { kind: 'legacy' }

/**
 * Every credential Tandem accepts: the admin token (login body or Bearer) and the consumer API
 * keys. Each failure, whichever surface it came through, spends from the one `credential`
 * limiter of its address; an address that has spent it is refused everywhere a credential is
 * needed, a correct one included, until it refills, so guessing through one door does not leave
 * another open.
 */
export class Credentials {
  constructor(
    private readonly opts: {
      adminToken: string
      consumerKeys: readonly string[]
      namedKeys?: NamedConsumerKeys
      /** METRICS_TOKEN: a bearer that may read /metrics and nothing else. */
      metricsToken?: string | null
      limits: Limits
      logger: Logger
    },
  ) {}

  get consumerKeysRequired(): boolean {
    return this.opts.consumerKeys.length > 0 || (this.opts.namedKeys?.required ?? false)
  }

  /** The 429 for an address that has used up its failed credentials, or null. */
  lockout(limitKey: string): ApiError | null {
    const state = this.opts.limits.peek('credential', limitKey)
    return state.ok
      ? null
      : rateLimitedError(state, `too many failed credentials from this address; try again in ${state.retryAfterS} s`)
  }

  isAdminToken(candidate: string): boolean {
    return secretEquals(candidate, this.opts.adminToken)
  }

  isConsumerKey(candidate: string): boolean {
    // Every key is compared, so the time taken does not tell which one nearly matched.
    let ok = false
    for (const k of this.opts.consumerKeys) ok = secretEquals(candidate, k) || ok
    return ok
  }

  /** Who a consumer bearer key belongs to: a named key, a legacy CONSUMER_API_KEYS entry, or null (wrong, disabled, expired). */
  consumerIdentity(candidate: string): ConsumerIdentity | null {
    const named = this.opts.namedKeys?.identify(candidate)
    if (named) return named
    return this.isConsumerKey(candidate) ? LEGACY : null
  }

  /** Admits one request of a named key (429 over its limits); the returned release ends it. */
  admitConsumer(who: ConsumerIdentity): () => void {
    return who.kind === 'key' && this.opts.namedKeys ? this.opts.namedKeys.admit(who) : () => undefined
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

  /** The login body's token: 429 when locked out, 401 (counted) when wrong. */
  verifyLogin(token: string, limitKey: string, clientIp: string): void {
    const locked = this.lockout(limitKey)
    if (locked) throw locked
    if (!this.isAdminToken(token)) {
      this.failed(limitKey, 'login', clientIp)
      throw new ApiError('unauthorized', 'wrong admin token')
    }
    this.opts.limits.reset('credential', limitKey)
  }
}
