import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { ApiError } from '../../../src-main/contract/errors'
import { fiatToSats, RateService, satsToFiat, toCentibps } from '../../../src-main/licensing/rates'
import { FakeRateSources } from '../../fakes/rates'

describe('rate arithmetic', () => {
  it('parses prices into centibps exactly', () => {
    expect(toCentibps('97250.12')).toBe(972501200)
    expect(toCentibps('97250.12345')).toBe(972501235) // half up at the fifth decimal
    expect(toCentibps('97250.123449')).toBe(972501234)
    expect(toCentibps(89600.25)).toBe(896002500)
    expect(() => toCentibps('0')).toThrow(/zero/)
    expect(() => toCentibps('-5')).toThrow()
    expect(() => toCentibps('abc')).toThrow()
  })

  it('converts fiat to sats rounding up, never undercharging', () => {
    // $19.99 at $97,250.12/BTC = 20555.24… sats → 20556
    expect(fiatToSats(1999, 972501200)).toBe(20556)
    // An exact conversion stays exact: $1,000.00 at $100,000 = 1,000,000 sats.
    expect(fiatToSats(100_000, 1_000_000_000)).toBe(1_000_000)
    for (const cents of [1, 7, 99, 12345, 999_999]) {
      const sats = fiatToSats(cents, 972501200)
      // The sats charged are worth at least the listed cents, and one sat less would not be.
      expect(sats * 972501200).toBeGreaterThanOrEqual(cents * 1e10)
      expect((sats - 1) * 972501200).toBeLessThan(cents * 1e10)
    }
    expect(satsToFiat(20556, 972501200, 'down')).toBe(1999)
    expect(satsToFiat(20556, 972501200, 'up')).toBe(2000)
  })
})

describe('RateService against loopback sources', () => {
  const fake = new FakeRateSources()
  beforeAll(async () => {
    await fake.start()
  })
  afterAll(async () => {
    await fake.stop()
  })

  const make = (clock = new ManualClock(), logs = new MemorySink()) =>
    new RateService({ baseUrls: fake.urls, clock, logger: createLogger({ sink: logs }), timeoutMs: 2000 })

  it('uses Kraken first, caches 60 s, then refetches', async () => {
    fake.kraken.failWith = null
    fake.coinbase.failWith = null
    const clock = new ManualClock()
    const svc = make(clock)
    const before = fake.requests('kraken').length
    const r = await svc.rate('USD')
    expect(r).toMatchObject({ source: 'kraken', centibps: toCentibps(fake.kraken.rates.USD.toFixed(5)) })
    clock.advance(59_000)
    await svc.rate('USD')
    expect(fake.requests('kraken').length).toBe(before + 1)
    clock.advance(2_000)
    await svc.rate('USD')
    expect(fake.requests('kraken').length).toBe(before + 2)
  })

  it('falls through Kraken → Coinbase → CoinGecko in order', async () => {
    const svc = make()
    fake.kraken.failWith = 500
    expect(await svc.rate('EUR')).toMatchObject({
      source: 'coinbase',
      centibps: toCentibps(String(fake.coinbase.rates.EUR)),
    })
    const svc2 = make()
    fake.coinbase.failWith = 503
    expect(await svc2.rate('USD')).toMatchObject({
      source: 'coingecko',
      centibps: toCentibps(fake.coingecko.rates.USD),
    })
    expect(svc2.sources().map((s) => [s.name, s.last_error !== null])).toEqual([
      ['kraken', true],
      ['coinbase', true],
      ['coingecko', false],
    ])
    fake.kraken.failWith = null
    fake.coinbase.failWith = null
  })

  it('serves a rate under 10 minutes old when every source fails, and refuses after that', async () => {
    const clock = new ManualClock()
    const logs = new MemorySink()
    const svc = make(clock, logs)
    const first = await svc.rate('USD')
    fake.kraken.failWith = 500
    fake.coinbase.failWith = 500
    fake.coingecko.failWith = 500
    try {
      clock.advance(5 * 60_000)
      expect(await svc.rate('USD')).toEqual(first)
      clock.advance(5 * 60_000 + 1)
      const err = await svc.rate('USD').catch((e: unknown) => e)
      expect(err).toBeInstanceOf(ApiError)
      expect((err as ApiError).code).toBe('rate_unavailable')
      expect((err as ApiError).status).toBe(503)
      expect((err as ApiError).message).toMatch(/kraken: HTTP 500; coinbase: HTTP 500; coingecko: HTTP 500/)
      expect(svc.cached('USD')).toBeNull()
    } finally {
      fake.kraken.failWith = null
      fake.coinbase.failWith = null
      fake.coingecko.failWith = null
    }
  })

  it('refuses with no sources configured, and rejects malformed answers', async () => {
    const none = new RateService({
      baseUrls: [],
      clock: new ManualClock(),
      logger: createLogger({ sink: new MemorySink() }),
    })
    await expect(none.rate('USD')).rejects.toMatchObject({ code: 'rate_unavailable' })
    const bogus = new RateService({
      baseUrls: ['http://kraken.invalid'],
      clock: new ManualClock(),
      logger: createLogger({ sink: new MemorySink() }),
      fetch: async () => new Response(JSON.stringify({ error: [], result: { XXBTZUSD: { c: ['0', '1'] } } })),
    })
    await expect(bogus.rate('USD')).rejects.toMatchObject({ message: expect.stringMatching(/kraken: rate is zero/) })
  })
})
