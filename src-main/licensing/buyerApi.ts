/**
 * Handlers of the buyer API (contract `licensingBuyerContract`), wire-compatible with the Keysat
 * client SDKs. Their per-address limits are declared in the contract and spent by the pipeline.
 */
import type { CallContext, Handlers } from '../contract/define'
import { ApiError } from '../contract/errors'
import type { PublicPolicy, licensingBuyerContract } from '../contract/licensing'
import { effectivePrice, isSatsCurrency, productView, type PolicyRow, type ProductRow } from './catalog'
import { iso, parseCatalog, parseStringList } from './json'
import type { ClientInfo } from './licenses'
import { fiatToSats, type FiatCurrency } from './rates'
import type { LicensingServices } from './services'

const DAY_S = 86_400

/** The caller as the validation log records it. */
const clientOf = (ctx: CallContext): ClientInfo => ({ ip: ctx.clientIp, userAgent: ctx.userAgent })

export function buyerHandlers(s: LicensingServices): Handlers<typeof licensingBuyerContract> {
  const { catalog, licenses } = s

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
    licPubkey: async () => ({ public_key_pem: s.issuer.publicKeyPem }),
    licProducts: async () => {
      const rows = s.db.prepare('SELECT * FROM products WHERE active = 1 ORDER BY name').all() as ProductRow[]
      return { products: rows.map(publicProduct) }
    },
    licProduct: async ({ slug }) => publicProduct(activeProduct(slug)),
    licProductPolicies: async ({ slug }) => {
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
    licRedeem: async (a) =>
      licenses.redeem({
        product: a.product,
        code: a.code,
        policy: a.policy ?? a.policy_slug,
        buyerEmail: a.buyer_email,
        buyerNote: a.buyer_note,
      }),
    licValidate: async (a, ctx) => licenses.validate(a, clientOf(ctx)),
    licMachineActivate: async (a, ctx) => licenses.activate(a, clientOf(ctx)),
    licMachineHeartbeat: async (a, ctx) => licenses.heartbeat(a, clientOf(ctx)),
    licMachineDeactivate: async (a, ctx) => licenses.deactivate(a, clientOf(ctx)),
    licRecover: async ({ key }) => licenses.recover(key),
  }
}
