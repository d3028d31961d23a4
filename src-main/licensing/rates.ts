/**
 * BTC exchange rates for fiat prices, from three public sources tried in DESIGN.md's fixed order:
 * Kraken ticker, Coinbase exchange-rates, CoinGecko simple price. Base URLs come from
 * `config.rateSources` in that order (tests point them at loopback). A rate is cached 60 s; when
 * every source fails, a rate fetched within the last 10 minutes may still serve, never an older or
 * a zero one: otherwise the caller gets a clear `rate_unavailable` refusal (503).
 *
 * Rates are integers in centibps: fiat units per BTC × 10,000 ($97,250.12 → 972501200).
 */
import { z } from 'zod'
import { ApiError } from '../contract/errors'
import type { RateSourceView } from '../contract/licensing'
import type { Clock } from '../lib/clock'
import { httpCall } from '../lib/httpClient'
import { redactUrlCredentials, type Logger } from '../lib/logger'

export type FiatCurrency = 'USD' | 'EUR'
export type RateSourceName = 'kraken' | 'coinbase' | 'coingecko'
export const SOURCE_ORDER: readonly RateSourceName[] = ['kraken', 'coinbase', 'coingecko']

export interface Rate {
  currency: FiatCurrency
  centibps: number
  source: RateSourceName
  fetchedAt: number
}

export const CACHE_MS = 60_000
export const MAX_AGE_MS = 10 * 60_000

/**
 * A decimal price ("97250.12", or a JSON number) → centibps, exactly (no float rounding for
 * strings), rounded half up at the fifth decimal.
 */
export function toCentibps(price: string | number): number {
  const text = typeof price === 'number' ? (Number.isFinite(price) ? price.toFixed(8) : 'x') : price.trim()
  const m = /^(\d{1,12})(?:\.(\d+))?$/.exec(text)
  if (!m) throw new Error(`not a price: ${String(price).slice(0, 40)}`)
  const frac = (m[2] ?? '').padEnd(5, '0')
  let v = BigInt(m[1]!) * 10_000n + BigInt(frac.slice(0, 4))
  if (Number(frac[4]) >= 5) v += 1n
  if (v <= 0n) throw new Error('rate is zero')
  return Number(v)
}

const KrakenTicker = z.object({
  error: z.array(z.string()).default([]),
  result: z.record(z.string(), z.object({ c: z.tuple([z.string(), z.string()]).rest(z.string()) })),
})
const CoinbaseRates = z.object({ data: z.object({ currency: z.string(), rates: z.record(z.string(), z.string()) }) })
const CoinGeckoPrice = z.object({ bitcoin: z.record(z.string(), z.number()) })

/** What a rate source call needs of an answer (tests hand in their own). */
interface RateAnswer {
  readonly ok: boolean
  readonly status: number
  json(): Promise<unknown>
  discard?(): void
}
type Fetch = (url: string, init: { signal: AbortSignal; headers: Record<string, string> }) => Promise<RateAnswer>

interface SourceState {
  lastOkAt: number | null
  lastError: string | null
  lastErrorAt: number | null
}

export class RateService {
  private readonly cache = new Map<FiatCurrency, Rate>()
  private readonly inflight = new Map<FiatCurrency, Promise<Rate>>()
  private readonly state = new Map<RateSourceName, SourceState>()
  private readonly fetchFn: Fetch
  private readonly timeoutMs: number

  constructor(
    private readonly opts: {
      baseUrls: readonly string[]
      clock: Clock
      logger: Logger
      fetch?: Fetch
      timeoutMs?: number
    },
  ) {
    this.fetchFn = opts.fetch ?? ((url, init) => httpCall(url, init))
    this.timeoutMs = opts.timeoutMs ?? 5000
    for (const s of SOURCE_ORDER) this.state.set(s, { lastOkAt: null, lastError: null, lastErrorAt: null })
  }

  private configured(): { name: RateSourceName; base: string }[] {
    return SOURCE_ORDER.slice(0, this.opts.baseUrls.length).map((name, i) => ({
      name,
      base: this.opts.baseUrls[i]!.replace(/\/+$/, ''),
    }))
  }

  cached(currency: FiatCurrency): Rate | null {
    const r = this.cache.get(currency)
    return r && this.opts.clock.now() - r.fetchedAt <= MAX_AGE_MS ? r : null
  }

  async rate(currency: FiatCurrency): Promise<Rate> {
    const hit = this.cache.get(currency)
    if (hit && this.opts.clock.now() - hit.fetchedAt < CACHE_MS) return hit
    const running = this.inflight.get(currency)
    if (running) return running
    const p = this.refresh(currency).finally(() => this.inflight.delete(currency))
    this.inflight.set(currency, p)
    return p
  }

  private async refresh(currency: FiatCurrency): Promise<Rate> {
    const errors: string[] = []
    for (const { name, base } of this.configured()) {
      const st = this.state.get(name)!
      try {
        const centibps = await this.fetchOne(name, base, currency)
        const rate: Rate = { currency, centibps, source: name, fetchedAt: this.opts.clock.now() }
        this.cache.set(currency, rate)
        st.lastOkAt = rate.fetchedAt
        return rate
      } catch (err) {
        const msg = (err as Error).message
        st.lastError = msg
        st.lastErrorAt = this.opts.clock.now()
        errors.push(`${name}: ${msg}`)
      }
    }
    const fallback = this.cached(currency)
    if (fallback) {
      this.opts.logger.warn('every rate source failed; using the last rate (under 10 minutes old)', {
        currency,
        errors,
      })
      return fallback
    }
    this.opts.logger.warn('no exchange rate available', { currency, errors })
    throw new ApiError(
      'rate_unavailable',
      `no ${currency}/BTC exchange rate is available right now, so a ${currency}-priced item cannot be priced (${errors.join('; ') || 'no rate sources configured'})`,
      { status: 503, headers: { 'Retry-After': '60' } },
    )
  }

  private async fetchOne(name: RateSourceName, base: string, currency: FiatCurrency): Promise<number> {
    const url =
      name === 'kraken'
        ? `${base}/0/public/Ticker?pair=XBT${currency}`
        : name === 'coinbase'
          ? `${base}/v2/exchange-rates?currency=BTC`
          : `${base}/api/v3/simple/price?ids=bitcoin&vs_currencies=usd,eur`
    const res = await this.fetchFn(url, {
      signal: AbortSignal.timeout(this.timeoutMs),
      headers: { accept: 'application/json' },
    })
    if (!res.ok) {
      res.discard?.()
      throw new Error(`HTTP ${res.status}`)
    }
    const body: unknown = await res.json().catch(() => {
      throw new Error('response is not JSON')
    })
    if (name === 'kraken') {
      const k = KrakenTicker.safeParse(body)
      if (!k.success) throw new Error('unexpected ticker shape')
      if (k.data.error.length > 0) throw new Error(k.data.error.join(', '))
      const pair = Object.values(k.data.result)[0]
      if (!pair) throw new Error('ticker has no pair')
      return toCentibps(pair.c[0])
    }
    if (name === 'coinbase') {
      const c = CoinbaseRates.safeParse(body)
      if (!c.success || c.data.data.currency !== 'BTC') throw new Error('unexpected exchange-rates shape')
      const v = c.data.data.rates[currency]
      if (v === undefined) throw new Error(`no ${currency} rate`)
      return toCentibps(v)
    }
    const g = CoinGeckoPrice.safeParse(body)
    if (!g.success) throw new Error('unexpected simple price shape')
    const v = g.data.bitcoin[currency.toLowerCase()]
    if (v === undefined) throw new Error(`no ${currency} price`)
    return toCentibps(v)
  }

  sources(): z.infer<typeof RateSourceView>[] {
    return this.configured().map(({ name, base }) => {
      const st = this.state.get(name)!
      return {
        name,
        base_url: redactUrlCredentials(base),
        last_ok_at: st.lastOkAt,
        last_error: st.lastError,
        last_error_at: st.lastErrorAt,
      }
    })
  }
}

/**
 * Minor fiat units (cents) → sats at `centibps`, rounded up so a buyer is never undercharged:
 * sats = cents × 10^8 × 10^4 / (100 × centibps).
 */
export function fiatToSats(cents: number, centibps: number): number {
  if (centibps <= 0) throw new Error('rate must be positive')
  const num = BigInt(cents) * 10_000_000_000n
  const den = BigInt(centibps)
  return Number((num + den - 1n) / den)
}

/** Sats → minor fiat units at `centibps`, rounded down or up as the caller needs. */
export function satsToFiat(sats: number, centibps: number, round: 'down' | 'up'): number {
  const num = BigInt(sats) * BigInt(centibps)
  const den = 10_000_000_000n
  return Number(round === 'down' ? num / den : (num + den - 1n) / den)
}
