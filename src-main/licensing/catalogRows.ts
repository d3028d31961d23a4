/**
 * The catalog's rows and what is computed from them alone: a product's and a policy's admin views,
 * a tier's effective price, a patch applied to a policy, and the checks a policy must pass.
 */
import type { Currency, PolicyInput, PolicyPatch, PolicyView, ProductView } from '../contract/licensing'
import { ApiError } from '../contract/errors'
import { parseAccess, parseCatalog, parseStringList } from './json'

export interface ProductRow {
  id: string
  slug: string
  name: string
  description: string
  price_sats: number
  price_currency: Currency
  price_value: number
  entitlements_catalog: string
  active: number
  return_url_prefix: string | null
  created_at: number
  updated_at: number
}

export interface PolicyRow {
  id: string
  product_id: string
  slug: string
  name: string
  description: string
  tier_rank: number | null
  price_sats_override: number | null
  price_currency_override: Currency | null
  price_value_override: number | null
  entitlements: string
  max_machines: number
  duration_days: number
  grace_period_days: number
  is_trial: number
  trial_days: number
  is_recurring: number
  renewal_period_days: number
  highlighted: number
  public: number
  active: number
  /** JSON access entitlements; NULL = none. */
  access: string | null
  created_at: number
  updated_at: number
}

/** SAT and BTC amounts are both in sats, so their sats price is the value itself. */
export const isSatsCurrency = (c: Currency): boolean => c === 'SAT' || c === 'BTC'

export function effectivePrice(product: ProductRow, policy: PolicyRow | null): { currency: Currency; value: number } {
  return {
    currency: policy?.price_currency_override ?? product.price_currency,
    value: policy?.price_value_override ?? product.price_value,
  }
}

/** A 0/1 column as a boolean. */
export const flag = (v: number): boolean => v === 1

export function productView(r: ProductRow): ProductView {
  return {
    id: r.id,
    slug: r.slug,
    name: r.name,
    description: r.description,
    price_currency: r.price_currency,
    price_value: r.price_value,
    price_sats: r.price_sats,
    entitlements_catalog: parseCatalog(r.entitlements_catalog),
    active: flag(r.active),
    return_url_prefix: r.return_url_prefix,
    created_at: r.created_at,
    updated_at: r.updated_at,
  }
}

export function policyView(r: PolicyRow, product: ProductRow): PolicyView {
  const price = effectivePrice(product, r)
  return {
    id: r.id,
    product_id: r.product_id,
    slug: r.slug,
    name: r.name,
    description: r.description,
    tier_rank: r.tier_rank,
    price_sats_override: r.price_sats_override,
    price_currency_override: r.price_currency_override,
    price_value_override: r.price_value_override,
    price_currency: price.currency,
    price_value: price.value,
    entitlements: parseStringList(r.entitlements),
    max_machines: r.max_machines,
    duration_days: r.duration_days,
    grace_period_days: r.grace_period_days,
    is_trial: flag(r.is_trial),
    trial_days: r.trial_days,
    is_recurring: flag(r.is_recurring),
    renewal_period_days: r.renewal_period_days,
    highlighted: flag(r.highlighted),
    public: flag(r.public),
    active: flag(r.active),
    access: parseAccess(r.access),
    created_at: r.created_at,
    updated_at: r.updated_at,
  }
}

/** A policy with a patch applied: a field the patch leaves out keeps its stored value. */
export function patchedPolicy(cur: PolicyRow, view: PolicyView, patch: PolicyPatch): PolicyInput {
  return {
    slug: patch.slug ?? cur.slug,
    name: patch.name ?? cur.name,
    description: patch.description ?? cur.description,
    ...patchedRankAndPrice(cur, patch),
    entitlements: patch.entitlements ?? view.entitlements,
    max_machines: patch.max_machines ?? cur.max_machines,
    duration_days: patch.duration_days ?? cur.duration_days,
    grace_period_days: patch.grace_period_days ?? cur.grace_period_days,
    trial_days: patch.trial_days ?? cur.trial_days,
    renewal_period_days: patch.renewal_period_days ?? cur.renewal_period_days,
    ...patchedSwitches(view, patch),
    access: patch.access !== undefined ? patch.access : view.access,
  }
}

/** The nullable fields: an explicit null clears them (back to unranked, or the product's price). */
function patchedRankAndPrice(
  cur: PolicyRow,
  patch: PolicyPatch,
): Pick<PolicyInput, 'tier_rank' | 'price_currency_override' | 'price_value_override'> {
  return {
    tier_rank: patch.tier_rank !== undefined ? patch.tier_rank : cur.tier_rank,
    price_currency_override:
      patch.price_currency_override !== undefined ? patch.price_currency_override : cur.price_currency_override,
    price_value_override:
      patch.price_value_override !== undefined ? patch.price_value_override : cur.price_value_override,
  }
}

/** The on/off settings, taken from the view because the row stores them as 0/1. */
function patchedSwitches(
  view: PolicyView,
  patch: PolicyPatch,
): Pick<PolicyInput, 'is_trial' | 'is_recurring' | 'highlighted' | 'public' | 'active'> {
  return {
    is_trial: patch.is_trial ?? view.is_trial,
    is_recurring: patch.is_recurring ?? view.is_recurring,
    highlighted: patch.highlighted ?? view.highlighted,
    public: patch.public ?? view.public,
    active: patch.active ?? view.active,
  }
}

export function isUniqueViolation(err: unknown): boolean {
  return err instanceof Error && /UNIQUE constraint failed/.test(err.message)
}

/** A policy the catalog can store: its price override complete, its recurrence set, its entitlements known. */
export function checkPolicy(product: ProductRow, p: PolicyInput): void {
  if (p.price_currency_override !== null && p.price_value_override === null)
    throw new ApiError('bad_input', 'a currency override needs a price_value_override in that currency')
  if (p.is_recurring && p.renewal_period_days < 1)
    throw new ApiError('bad_input', 'a recurring tier needs renewal_period_days of at least 1')
  const catalog = parseCatalog(product.entitlements_catalog)
  if (catalog.length > 0) {
    const known = new Set(catalog.map((c) => c.slug))
    const unknown = p.entitlements.filter((e) => !known.has(e))
    if (unknown.length > 0)
      throw new ApiError('bad_input', `entitlements not in the product's catalog: ${unknown.join(', ')}`)
  }
}

export function overrideSats(
  product: ProductRow,
  p: { price_currency_override: Currency | null; price_value_override: number | null },
): number | null {
  if (p.price_value_override === null) return null
  return isSatsCurrency(p.price_currency_override ?? product.price_currency) ? p.price_value_override : null
}
