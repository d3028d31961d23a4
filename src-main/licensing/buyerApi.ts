/**
 * Handlers of the buyer API (contract `licensingBuyerContract`), wire-compatible with the Keysat
 * client SDKs. Their per-address limits are declared in the contract and spent by the pipeline.
 */
import type { CallContext, Handlers } from '../contract/define'
import { ApiError } from '../contract/errors'
import type { PublicPolicy, RecoverInput, RecoverResponse, licensingBuyerContract } from '../contract/licensing'
import { effectivePrice, productView, type PolicyRow, type ProductRow } from './productCatalog'
import { iso, parseCatalog, parseStringList } from './json'
import { CURRENT_KEY_VERSION } from './keys/keyFormat'
import type { ClientInfo } from './licenses'
import { recoverByInvoice } from './recovery'
import type { LicensingServices } from './licensingServices'

/** `{license_key}` / `{key}` or `{invoice_id, email}` (the contract guarantees one of them). */
export function recoverBy(s: LicensingServices, a: RecoverInput): RecoverResponse {
  const key = a.license_key ?? a.key
  if (key !== undefined) return s.licenses.recovery.recover(key)
  if (a.invoice_id === undefined || a.email === undefined)
    throw new ApiError('bad_input', 'send license_key, or invoice_id and email')
  return recoverByInvoice(s, a.invoice_id, a.email)
}

const DAY_S = 86_400

/** A product the shop sells now, by slug (404 otherwise). */
function activeProductOf(s: LicensingServices, slug: string): ProductRow {
  const p = s.catalog.productBySlug(slug)
  if (!p || p.active !== 1) throw new ApiError('not_found', `no product ${slug}`)
  return p
}

/** The caller as the validation log records it. */
const clientOf = (ctx: CallContext): ClientInfo => ({ ip: ctx.clientIp, userAgent: ctx.userAgent })

/** All buyer methods but the top-up (topUpSales.ts: it opens an invoice, so it lives with the payments). */
export function buyerHandlers(s: LicensingServices): Handlers<Omit<typeof licensingBuyerContract, 'licBuyTopUp'>> {
  const { catalog, licenses } = s

  /** Sats for a listed price, at a rate fetched on demand when none is cached (503 rate_unavailable when no source answers). */
  const satsOf = async (currency: ProductRow['price_currency'], value: number): Promise<number> =>
    (await s.pricing.toSats(value, currency)).sats

  const publicProduct = async (p: ProductRow) => {
    const v = productView(p)
    return {
      ...v,
      base_price_sats: await satsOf(p.price_currency, p.price_value),
      created_at: iso(p.created_at),
      updated_at: iso(p.updated_at),
    }
  }

  const activeProduct = (slug: string): ProductRow => activeProductOf(s, slug)

  /** `price_sats` is the listed currency's smallest unit (sats, or cents for USD/EUR), as the SDKs document it. */
  const publicPolicy = (p: ProductRow, r: PolicyRow): PublicPolicy => {
    const price = effectivePrice(p, r)
    return {
      slug: r.slug,
      name: r.name,
      description: r.description,
      price_sats: price.value,
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

  /** Public tiers by ascending price (compared in sats across currencies), then rank, then name. */
  const publicPolicies = async (p: ProductRow): Promise<PublicPolicy[]> => {
    const rows = catalog.policyRows(p.id).filter((r) => r.active === 1 && r.public === 1)
    const priced = await Promise.all(
      rows.map(async (r) => {
        const price = effectivePrice(p, r)
        return { r, sats: await satsOf(price.currency, price.value) }
      }),
    )
    priced.sort(
      (a, b) =>
        a.sats - b.sats ||
        (a.r.tier_rank ?? Number.MAX_SAFE_INTEGER) - (b.r.tier_rank ?? Number.MAX_SAFE_INTEGER) ||
        a.r.name.localeCompare(b.r.name),
    )
    return priced.map(({ r }) => publicPolicy(p, r))
  }

  return {
    licPubkey: async () => ({ algorithm: 'ed25519' as const, public_key_pem: s.issuer.publicKeyPem }),
    licIssuerPublicKey: async () => ({
      public_key_pem: s.issuer.publicKeyPem,
      key_algorithm: 'ed25519' as const,
      key_format_version: CURRENT_KEY_VERSION,
    }),
    licHealthz: async () => ({ ok: true as const }),
    licProducts: async () => {
      const rows = s.db.prepare('SELECT * FROM products WHERE active = 1 ORDER BY name').all() as ProductRow[]
      return { products: await Promise.all(rows.map(publicProduct)) }
    },
    licProduct: async ({ slug }) => publicProduct(activeProduct(slug)),
    licProductPolicies: async ({ slug }) => {
      const p = activeProduct(slug)
      const policies = await publicPolicies(p)
      return {
        product: {
          slug: p.slug,
          name: p.name,
          description: p.description,
          base_price_sats: await satsOf(p.price_currency, p.price_value),
          price_currency: p.price_currency,
          price_value: p.price_value,
          entitlements_catalog: parseCatalog(p.entitlements_catalog),
        },
        policies,
      }
    },
    licRedeem: async (a) =>
      licenses.redemption.redeem({
        product: a.product,
        code: a.code,
        policy: a.policy ?? a.policy_slug,
        buyerEmail: a.buyer_email,
        buyerNote: a.buyer_note,
      }),
    licValidate: async (a, ctx) => licenses.validation.validate(a, clientOf(ctx)),
    licMachineActivate: async (a, ctx) => licenses.machines.activate(a, clientOf(ctx)),
    licMachineHeartbeat: async (a, ctx) => licenses.machines.heartbeat(a, clientOf(ctx)),
    licMachineDeactivate: async (a, ctx) => licenses.machines.deactivate(a, clientOf(ctx)),
    licRecover: async (a) => recoverBy(s, a),
    licGatewayKey: async (a) => licenses.access.recover(a.license_key),
    licDiscountPreview: async (a) =>
      s.pricing.preview({ productSlug: a.product, policy: a.policy_slug ?? a.policy, code: a.code }),
  }
}
