import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { RateService } from '../../../src-main/licensing/rates'
import { FakeRateSources } from '../../fakes/rates'

let fakes: FakeRateSources
beforeAll(async () => {
  fakes = await new FakeRateSources().start()
})
afterAll(async () => {
  await fakes.stop()
})

// The fakes speak each public source's own shape; Tandem's rate service must read all three.
describe('the loopback rate sources agree with the rate service', () => {
  const service = () =>
    new RateService({
      baseUrls: fakes.urls,
      clock: new ManualClock(),
      logger: createLogger({ sink: new MemorySink() }),
    })

  it('Kraken first, then Coinbase, then CoinGecko, each in centibps', async () => {
    fakes.kraken.failWith = null
    fakes.coinbase.failWith = null
    expect(await service().rate('USD')).toMatchObject({ source: 'kraken', centibps: 972_501_200 })
    expect(await service().rate('EUR')).toMatchObject({ source: 'kraken', centibps: 895_005_000 })
    expect(fakes.requests('kraken').at(-1)!.path).toBe('/0/public/Ticker?pair=XBTEUR')

    fakes.kraken.failWith = 503
    expect(await service().rate('USD')).toMatchObject({ source: 'coinbase', centibps: 973_000_000 })
    expect(fakes.requests('coinbase').at(-1)!.path).toBe('/v2/exchange-rates?currency=BTC')

    fakes.coinbase.failWith = 500
    expect(await service().rate('EUR')).toMatchObject({ source: 'coingecko', centibps: 896_002_500 })
    expect(fakes.requests('coingecko').at(-1)!.path).toBe('/api/v3/simple/price?ids=bitcoin&vs_currencies=usd,eur')

    fakes.coingecko.failWith = 429
    await expect(service().rate('USD')).rejects.toMatchObject({ status: 503 })
    fakes.kraken.failWith = fakes.coinbase.failWith = fakes.coingecko.failWith = null
  })
})
