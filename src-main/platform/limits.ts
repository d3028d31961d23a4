import type { LimiterName } from '../contract/define'
import { ApiError } from '../contract/errors'
import type { Clock } from '../lib/clock'
import { RateLimiter } from '../lib/rateLimit'

/** What a limited call reports back (the standard RateLimit-* headers over HTTP). */
export interface LimitState {
  readonly ok: boolean
  readonly limit: number
  readonly remaining: number
  readonly resetS: number
  /** Seconds until a refused caller may try again; 0 when allowed. */
  readonly retryAfterS: number
}

export function limitHeaders(s: LimitState): Record<string, string> {
  if (s.limit === 0) return {}
  const h: Record<string, string> = {
    'RateLimit-Limit': String(s.limit),
    'RateLimit-Remaining': String(s.remaining),
    'RateLimit-Reset': String(s.resetS),
  }
  if (!s.ok) h['Retry-After'] = String(s.retryAfterS)
  return h
}

export function rateLimitedError(s: LimitState, message: string): ApiError {
  return new ApiError('rate_limited', message, { headers: limitHeaders(s) })
}

export interface LimitsOptions {
  clock: Clock
  /** Licensing public API requests per minute per address; 0 = unlimited. */
  publicPerMinute: number
}

/**
 * The named per-address limiters every transport shares: contract methods declare one by name
 * (`limit` in the contract), the HTML pages use the same ones, and the credential limiter counts
 * failed credentials on every credentialed surface.
 */
export class Limits {
  private readonly limiters = new Map<LimiterName, RateLimiter>()

  constructor(opts: LimitsOptions) {
    const perMinute = (n: number) => new RateLimiter({ capacity: n, refillPerSecond: n / 60, clock: opts.clock })
    // Five failed credentials, then one more every 12 s.
    this.limiters.set('credential', new RateLimiter({ capacity: 5, refillPerSecond: 1 / 12, clock: opts.clock }))
    this.limiters.set('login', perMinute(20))
    // Reports from LAN apps: a burst of 30, then one a second.
    this.limiters.set('health-event', new RateLimiter({ capacity: 30, refillPerSecond: 1, clock: opts.clock }))
    if (opts.publicPerMinute > 0) {
      this.limiters.set('public', perMinute(opts.publicPerMinute))
      // Codes can be guessed: redeem stays slow whatever the public limit.
      this.limiters.set('redeem', perMinute(Math.min(10, opts.publicPerMinute)))
      // An invoice id and an e-mail can be guessed too: recover is as slow.
      this.limiters.set('recover', perMinute(Math.min(10, opts.publicPerMinute)))
    }
  }

  /** Spends one request of `name` for `key`. */
  take(name: LimiterName, key: string): LimitState {
    const l = this.limiters.get(name)
    if (!l) return UNLIMITED
    const ok = l.take(key)
    return { ok, ...l.state(key), retryAfterS: ok ? 0 : Math.max(1, l.retryAfterSeconds(key)) }
  }

  /** Whether `key` could spend one now, without spending it. */
  peek(name: LimiterName, key: string): LimitState {
    const l = this.limiters.get(name)
    if (!l) return UNLIMITED
    const ok = l.available(key) >= 1
    return { ok, ...l.state(key), retryAfterS: ok ? 0 : Math.max(1, l.retryAfterSeconds(key)) }
  }

  reset(name: LimiterName, key: string): void {
    this.limiters.get(name)?.reset(key)
  }
}

const UNLIMITED: LimitState = { ok: true, limit: 0, remaining: 0, resetS: 0, retryAfterS: 0 }
