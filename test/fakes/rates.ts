import { LoopbackServer, type FakeReply, type RecordedRequest } from './loopback'

export type FakeFiat = 'USD' | 'EUR'

interface SourceState {
  rates: Record<FakeFiat, number>
  /** When set, the source answers this HTTP status instead of a rate. */
  failWith: number | null
}

/**
 * The three public rate sources DESIGN.md names, on loopback, in the fixed order Tandem tries
 * them: Kraken ticker, Coinbase exchange-rates, CoinGecko simple price. Each can be given its own
 * rates or made to fail, and records its requests.
 */
export class FakeRateSources {
  readonly kraken: SourceState = { rates: { USD: 97250.12, EUR: 89500.5 }, failWith: null }
  readonly coinbase: SourceState = { rates: { USD: 97300, EUR: 89550 }, failWith: null }
  readonly coingecko: SourceState = { rates: { USD: 97350.5, EUR: 89600.25 }, failWith: null }
  private readonly servers = {
    kraken: new LoopbackServer((req, url) => this.krakenReply(req, url)),
    coinbase: new LoopbackServer((req, url) => this.coinbaseReply(req, url)),
    coingecko: new LoopbackServer((req, url) => this.coingeckoReply(req, url)),
  }

  async start(): Promise<this> {
    await Promise.all(Object.values(this.servers).map((s) => s.start()))
    return this
  }

  async stop(): Promise<void> {
    await Promise.all(Object.values(this.servers).map((s) => s.stop()))
  }

  /** Base URLs in Tandem's order, ready for `RATE_SOURCES`. */
  get urls(): string[] {
    return [this.servers.kraken.url, this.servers.coinbase.url, this.servers.coingecko.url]
  }

  get env(): { RATE_SOURCES: string } {
    return { RATE_SOURCES: this.urls.join(',') }
  }

  requests(source: 'kraken' | 'coinbase' | 'coingecko'): readonly RecordedRequest[] {
    return this.servers[source].requests
  }

  private krakenReply(_req: RecordedRequest, url: URL): FakeReply {
    if (this.kraken.failWith) return { status: this.kraken.failWith, body: { error: ['EService:Unavailable'] } }
    if (url.pathname !== '/0/public/Ticker') return { status: 404, body: { error: ['EGeneral:Unknown method'] } }
    const pair = url.searchParams.get('pair') ?? ''
    const fiat = pair === 'XBTUSD' ? 'USD' : pair === 'XBTEUR' ? 'EUR' : null
    if (!fiat) return { status: 200, body: { error: ['EQuery:Unknown asset pair'] } }
    const price = this.kraken.rates[fiat].toFixed(5)
    return {
      status: 200,
      body: {
        error: [],
        result: {
          [`XXBTZ${fiat}`]: { a: [price, '1', '1.000'], b: [price, '1', '1.000'], c: [price, '0.00100000'] },
        },
      },
    }
  }

  private coinbaseReply(_req: RecordedRequest, url: URL): FakeReply {
    if (this.coinbase.failWith) return { status: this.coinbase.failWith, body: { errors: [{ id: 'internal' }] } }
    if (url.pathname !== '/v2/exchange-rates' || url.searchParams.get('currency') !== 'BTC') {
      return { status: 404, body: { errors: [{ id: 'not_found' }] } }
    }
    const r = this.coinbase.rates
    return {
      status: 200,
      body: { data: { currency: 'BTC', rates: { USD: String(r.USD), EUR: String(r.EUR), BTC: '1.0' } } },
    }
  }

  private coingeckoReply(_req: RecordedRequest, url: URL): FakeReply {
    if (this.coingecko.failWith) return { status: this.coingecko.failWith, body: { status: { error_code: 429 } } }
    if (url.pathname !== '/api/v3/simple/price' || url.searchParams.get('ids') !== 'bitcoin') {
      return { status: 404, body: { error: 'not found' } }
    }
    const wanted = (url.searchParams.get('vs_currencies') ?? '').split(',')
    const out: Record<string, number> = {}
    for (const c of wanted) {
      const k = c.trim().toUpperCase() as FakeFiat
      if (k in this.coingecko.rates) out[c.trim().toLowerCase()] = this.coingecko.rates[k]
    }
    return { status: 200, body: { bitcoin: out } }
  }
}
