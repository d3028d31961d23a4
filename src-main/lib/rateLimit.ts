import type { Clock } from './clock'

/**
 * Token buckets keyed by a string (a client address, a login source). Capacity is the burst;
 * tokens refill continuously. Time comes from the injected clock so tests need no waiting.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>()

  constructor(private readonly opts: { capacity: number; refillPerSecond: number; clock: Clock; maxKeys?: number }) {}

  /** Takes one token for `key`; false when the bucket is empty. */
  take(key: string): boolean {
    const now = this.opts.clock.now()
    const refilled = this.available(key)
    const ok = refilled >= 1
    this.buckets.delete(key) // re-insert so Map order is least-recently-used first
    this.buckets.set(key, { tokens: ok ? refilled - 1 : refilled, at: now })
    this.evict()
    return ok
  }

  /** Tokens `key` has now, without taking one. */
  available(key: string): number {
    const b = this.buckets.get(key)
    if (!b) return this.opts.capacity
    return Math.min(this.opts.capacity, b.tokens + ((this.opts.clock.now() - b.at) / 1000) * this.opts.refillPerSecond)
  }

  /** Seconds until `key` has a token again (for Retry-After). */
  retryAfterSeconds(key: string): number {
    const tokens = this.available(key)
    return tokens >= 1 ? 0 : Math.ceil((1 - tokens) / this.opts.refillPerSecond)
  }

  /** What the standard RateLimit-* headers report for `key`: burst size, whole tokens left, seconds until full. */
  state(key: string): { limit: number; remaining: number; resetS: number } {
    const tokens = this.available(key)
    return {
      limit: this.opts.capacity,
      remaining: Math.floor(tokens),
      resetS: Math.ceil((this.opts.capacity - tokens) / this.opts.refillPerSecond),
    }
  }

  reset(key: string): void {
    this.buckets.delete(key)
  }

  private evict(): void {
    const max = this.opts.maxKeys ?? 10_000
    while (this.buckets.size > max) {
      const oldest = this.buckets.keys().next().value
      if (oldest === undefined) break
      this.buckets.delete(oldest)
    }
  }
}
