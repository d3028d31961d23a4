import type { Clock } from './clock'

/**
 * Token buckets keyed by a string (a client address, a login source). Capacity is the burst;
 * tokens refill continuously. Time comes from the injected clock so tests need no waiting.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>()

  constructor(
    private readonly opts: { capacity: number; refillPerSecond: number; clock: Clock; maxKeys?: number },
  ) {}

  /** Takes one token for `key`; false when the bucket is empty. */
  take(key: string): boolean {
    const now = this.opts.clock.now()
    const b = this.buckets.get(key) ?? { tokens: this.opts.capacity, at: now }
    const refilled = Math.min(this.opts.capacity, b.tokens + ((now - b.at) / 1000) * this.opts.refillPerSecond)
    const ok = refilled >= 1
    this.buckets.delete(key) // re-insert so Map order is least-recently-used first
    this.buckets.set(key, { tokens: ok ? refilled - 1 : refilled, at: now })
    this.evict()
    return ok
  }

  /** Seconds until `key` has a token again (for Retry-After). */
  retryAfterSeconds(key: string): number {
    const b = this.buckets.get(key)
    if (!b || b.tokens >= 1) return 0
    return Math.ceil((1 - b.tokens) / this.opts.refillPerSecond)
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
