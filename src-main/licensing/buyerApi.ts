/**
 * Handlers of the buyer API (contract `licensingBuyerContract`), wire-compatible with the Keysat
 * client SDKs. Public endpoints are rate-limited per client address (LICENSING_RATE_LIMIT per
 * minute; redeem at most 10 per minute, since codes can be guessed). A limited validate still
 * answers 200 with reason `rate_limited`, as the SDKs expect.
 */
import type { Handlers } from '../contract/define'
import { ApiError } from '../contract/errors'
import type { PublicPolicy, licensingBuyerContract } from '../contract/licensing'
import { RateLimiter } from '../core/rateLimit'
import { effectivePrice, isSatsCurrency, productView, type PolicyRow, type ProductRow } from './catalog'
import { iso, parseCatalog, parseStringList } from './json'
import { fiatToSats, type FiatCurrency } from './rates'
import type { LicensingServices } from './services'

const DAY_S = 86_400

export interface BuyerLimits {
  take(kind: 'public' | 'redeem', clientIp: string | undefined): boolean
  retryAfter(kind: 'public' | 'redeem', clientIp: string | undefined): number
}

export function buyerLimits(s: LicensingServices): BuyerLimits {
  const perMinute = s.deps.config.licensingRateLimit
  const make = (n: number) => new RateLimiter({ capacity: n, refillPerSecond: n / 60, clock: s.deps.clock })
  const limiters = perMinute > 0 ? { public: make(perMinute), redeem: make(Math.min(10, perMinute)) } : null
  return {
    // IPC callers (no address) are the desktop operator: never limited.
    take: (kind, ip) => limiters === null || ip === undefined || limiters[kind].take(ip),
    retryAfter: (kind, ip) => (limiters === null || ip === undefined ? 0 : limiters[kind].retryAfterSeconds(ip)),
  }
}

export function buyerHandlers(s: LicensingServices, limits: BuyerLimits): Handlers<typeof licensingBuyerContract> {
  const { catalog, licenses } = s
  const limit = (kind: 'public' | 'redeem', ip: string | undefined): void => {
    if (!limits.take(kind, ip)) {
      const after = Math.max(1, limits.retryAfter(kind, ip))
      throw new ApiError('rate_limited', 'too many requests from this address; try again shortly', {
        headers: { 'Retry-After': String(after) },
      })
    }
  }

  /** Sats for a listed price: the value for SAT/BTC, a cached-rate conversion for fiat (0 when no rate is known yet). */
  const satsOf = (currency: ProductRow['price_currency'], value: number): number => {
    if (isSatsCurrency(currency)) return value
    const r = s.rates.cached(currency as FiatCurrency)
    return r ? fiatToSats(value, r.centibps) : 0
  }

  const publicProduct = (p: ProductRow) => {
    const v = productView(p)
    return {
      ...v,
      base_price_sats: satsOf(p.price_currency, p.price_value),
      created_at: iso(p.created_at),
      updated_at: iso(p.updated_at),
    }
  }

  const activeProduct = (slug: string): ProductRow => {
    const p = catalog.productBySlug(slug)
    if (!p || p.active !== 1) throw new ApiError('not_found', `no product ${slug}`)
    return p
  }

  const publicPolicy = (p: ProductRow, r: PolicyRow): PublicPolicy => {
    const price = effectivePrice(p, r)
    return {
      slug: r.slug,
      name: r.name,
      description: r.description,
      price_sats: satsOf(price.currency, price.value),
      price_currency: price.currency,
      price_value: price.value,
      duration_seconds: r.duration_days * DAY_S,
      max_machines: r.max_machines,
      is_trial: r.is_trial === 1,
      entitlements: parseStringList(r.entitlements),
      highlighted: r.highlighted === 1,
      is_recurring: r.is_recurring === 1,
      renewal_period_days: r.renewal_period_days,
      trial_days: r.trial_days,
      tier_rank: r.tier_rank,
    }
  }

  return {
    licPubkey: async (_in, ctx) => {
      limit('public', ctx.clientIp)
      return { public_key_pem: s.issuer.publicKeyPem }
    },
    licProducts: async (_in, ctx) => {
      limit('public', ctx.clientIp)
      const rows = s.db.prepare('SELECT * FROM products WHERE active = 1 ORDER BY name').all() as ProductRow[]
      return { products: rows.map(publicProduct) }
    },
    licProduct: async ({ slug }, ctx) => {
      limit('public', ctx.clientIp)
      return publicProduct(activeProduct(slug))
    },
    licProductPolicies: async ({ slug }, ctx) => {
      limit('public', ctx.clientIp)
      const p = activeProduct(slug)
      const policies = catalog
        .policyRows(p.id)
        .filter((r) => r.active === 1 && r.public === 1)
        .map((r) => publicPolicy(p, r))
      return {
        product: {
          slug: p.slug,
          name: p.name,
          description: p.description,
          base_price_sats: satsOf(p.price_currency, p.price_value),
          price_currency: p.price_currency,
          price_value: p.price_value,
          entitlements_catalog: parseCatalog(p.entitlements_catalog),
        },
        policies,
      }
    },
    licRedeem: async (a, ctx) => {
      limit('redeem', ctx.clientIp)
      return licenses.redeem({
        product: a.product,
        code: a.code,
        policy: a.policy ?? a.policy_slug,
        buyerEmail: a.buyer_email,
        buyerNote: a.buyer_note,
      })
    },
    licValidate: async (a, ctx) => {
      if (!limits.take('public', ctx.clientIp)) return { ok: false, reason: 'rate_limited' }
      return licenses.validate(a, ctx.clientIp)
    },
    licMachineActivate: async (a, ctx) => {
      limit('public', ctx.clientIp)
      return licenses.activate(a, ctx.clientIp)
    },
    licMachineHeartbeat: async (a, ctx) => {
      limit('public', ctx.clientIp)
      return licenses.heartbeat(a, ctx.clientIp)
    },
    licMachineDeactivate: async (a, ctx) => {
      limit('public', ctx.clientIp)
      return licenses.deactivate(a)
    },
    licRecover: async ({ key }, ctx) => {
      limit('public', ctx.clientIp)
      return licenses.recover(key)
    },
  }
}
