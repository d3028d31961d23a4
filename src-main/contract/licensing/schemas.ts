import { z } from 'zod'
import { MinorUnits, Slug, Uuid } from '../schemas'

export { MinorUnits, Slug, Uuid }

/** Schemas the licensing buyer, admin and payments methods share. */

/** What every buyer-facing method declares: licensing error shape, HTTP only, the per-address public limit. */
export const buyerSurface = { errorStyle: 'licensing', httpOnly: true, limit: 'public' } as const

export const Currency = z.enum(['SAT', 'USD', 'EUR', 'BTC'])
export type Currency = z.infer<typeof Currency>

export const EntitlementSlug = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/, 'letters, digits, _ . : - (max 64)')
export const Email = z.email().max(254)
export const Note = z.string().max(2000)
export const Reason = z.string().max(500)
/** Raw machine fingerprint as the client SDKs send it (hashed with SHA-256 before storage). */
export const Fingerprint = z.string().min(1).max(1024)
export const Hostname = z.string().max(255)
export const Platform = z.string().max(100)
/** Signed license key text; generous bound, the parser enforces the format. */
export const KeyText = z.string().max(16_384)

/**
 * A PATCH schema from a create schema: every field optional and WITHOUT its default (zod 4 applies
 * a default inside `.partial()`, which would reset every field the caller left out).
 */
export function patchOf<S extends z.ZodRawShape>(o: z.ZodObject<S>) {
  const shape: Record<string, z.ZodType> = {}
  for (const [k, v] of Object.entries(o.shape) as [string, z.ZodType][])
    shape[k] = (v instanceof z.ZodDefault ? (v.unwrap() as z.ZodType) : v).optional()
  return z.object(shape) as unknown as z.ZodObject<{
    [K in keyof S]: z.ZodOptional<S[K] extends z.ZodDefault<infer I extends z.ZodType> ? I : S[K]>
  }>
}

/** Where a product's buyers may be sent back after paying: an http(s) URL without credentials. */
export const ReturnUrlPrefix = z
  .url({ protocol: /^https?$/ })
  .max(2048)
  .refine((u) => !/^[a-z]+:\/\/[^/]*@/i.test(u), 'no user name or password in the URL')

export const EntitlementDef = z.object({
  slug: EntitlementSlug,
  name: z.string().max(200),
  description: z.string().max(1000).default(''),
})
export type EntitlementDef = z.infer<typeof EntitlementDef>

export const ProductView = z.object({
  id: z.string(),
  slug: z.string(),
  name: z.string(),
  description: z.string(),
  price_currency: Currency,
  price_value: z.number(),
  /** Legacy sats price: equals price_value for SAT products. */
  price_sats: z.number(),
  entitlements_catalog: z.array(EntitlementDef),
  active: z.boolean(),
  /** redirect_url must start with this (or be on PUBLIC_URL / REDIRECT_ALLOWLIST); null = none configured. */
  return_url_prefix: z.string().nullable(),
  created_at: z.number(),
  updated_at: z.number(),
})
export type ProductView = z.infer<typeof ProductView>

/** A served model's name as clients send it, or a catalog key. */
const AccessModel = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\w.:/@+-]+$/, 'a model id: letters, digits and . : / @ + - _')
const AccessLimit = z.number().int().min(1)

/** Tokens an operator adds to a license's current period (or a top-up bought). */
export const TopUpTokens = z.number().int().min(1).max(1e12)

/**
 * A one-off top-up a buyer may buy on a tier with a token quota: `tokens` more in the current
 * period, for `price_value` in the tier's currency (its smallest unit).
 */
export const AccessTopUpPack = z.strictObject({
  tokens: TopUpTokens,
  price_value: MinorUnits.min(1),
})
export type AccessTopUpPack = z.infer<typeof AccessTopUpPack>

/**
 * What a tier sells of the cluster: the buyer's gateway key gets these models and limits. Every
 * limit is null for none; `models` null means every model.
 */
export const AccessEntitlements = z.strictObject({
  models: z.array(AccessModel).min(1).max(200).nullable().default(null),
  /** Tokens (prompt + completion) per period: the subscription's cycle, else a calendar month from issue. */
  tokens_per_period: AccessLimit.max(1e15).nullable().default(null),
  requests_per_minute: AccessLimit.max(1_000_000).nullable().default(null),
  concurrent_streams: AccessLimit.max(10_000).nullable().default(null),
  /** The top-up a buyer may buy; null: none on sale. Only a tier with a token quota has one. */
  top_up: AccessTopUpPack.nullable().default(null),
  /** Minutes of audio per period (same period as tokens): transcribed input, synthesized speech. */
  audio_minutes_per_period: AccessLimit.max(1e9).nullable().default(null),
})
export type AccessEntitlements = z.infer<typeof AccessEntitlements>

/** An access block as the operator sets it: a top-up pack only beside a token quota. */
export const AccessEntitlementsInput = AccessEntitlements.refine(
  (a) => a.top_up === null || a.tokens_per_period !== null,
  {
    path: ['top_up'],
    message: 'a top-up pack needs tokens_per_period: without a token quota there is nothing to top up',
  },
)

/** An access license's tokens this period: what its tier and top-ups allow, what its key used, when it resets. */
export const AccessQuota = z.object({
  /** The tier's tokens per period; null: no quota. */
  tokens_per_period: z.number().nullable(),
  /** Tokens added by top-ups bought or granted in this period. */
  top_up_tokens: z.number(),
  tokens_used: z.number(),
  /** null: no quota. Never below zero; a stream that crossed the quota shows in `tokens_used`. */
  tokens_remaining: z.number().nullable(),
  /** The tier's audio minutes per period; null: no audio quota. */
  audio_minutes_per_period: z.number().nullable(),
  /** Seconds of audio transcribed or synthesized this period. */
  audio_seconds_used: z.number(),
  /** null: no audio quota. Never below zero. */
  audio_seconds_remaining: z.number().nullable(),
  period_start: z.string(),
  resets_at: z.string(),
})
export type AccessQuota = z.infer<typeof AccessQuota>

/** One standing access license in the operator's view: its tokens this period (times in epoch ms). */
export const AccessLicenseRow = z.object({
  license_id: z.string(),
  product_slug: z.string(),
  tier_slug: z.string(),
  buyer_email: z.string().nullable(),
  /** The tier's quota plus this period's top-ups; null: no quota. */
  tokens_allowed: z.number().nullable(),
  top_up_tokens: z.number(),
  tokens_used: z.number(),
  tokens_remaining: z.number().nullable(),
  /** The tier's audio minutes × 60; null: no audio quota. */
  audio_seconds_allowed: z.number().nullable(),
  audio_seconds_used: z.number(),
  /** Sats paid for this period (the cycle's invoice, or a purchase, upgrade or top-up settled in it). */
  revenue_sats: z.number(),
  period_start: z.number(),
  resets_at: z.number(),
})
export type AccessLicenseRow = z.infer<typeof AccessLicenseRow>

/** A model's share of the access licenses' current periods; `model` null: paid for, no tokens used yet. */
export const AccessModelRevenue = z.object({
  model: z.string().nullable(),
  tokens: z.number(),
  requests: z.number(),
  revenue_sats: z.number(),
})
export type AccessModelRevenue = z.infer<typeof AccessModelRevenue>

/** The access licenses' current periods added up. */
export const AccessTotals = z.object({
  licenses: z.number(),
  /** Of `licenses`, those whose tier has no token quota (their tokens count as used, not as sold). */
  unlimited_licenses: z.number(),
  /** Quotas plus top-ups of the licenses with a quota. */
  tokens_sold: z.number(),
  tokens_used: z.number(),
  /** The audio minutes × 60 of the licenses whose tier has an audio quota. */
  audio_seconds_sold: z.number(),
  audio_seconds_used: z.number(),
  revenue_sats: z.number(),
})
export type AccessTotals = z.infer<typeof AccessTotals>

export const PolicyView = z.object({
  id: z.string(),
  product_id: z.string(),
  slug: z.string(),
  name: z.string(),
  description: z.string(),
  tier_rank: z.number().nullable(),
  price_sats_override: z.number().nullable(),
  price_currency_override: Currency.nullable(),
  price_value_override: z.number().nullable(),
  /** Effective listed price: the overrides, else the product's. */
  price_currency: Currency,
  price_value: z.number(),
  entitlements: z.array(z.string()),
  max_machines: z.number(),
  duration_days: z.number(),
  grace_period_days: z.number(),
  is_trial: z.boolean(),
  trial_days: z.number(),
  is_recurring: z.boolean(),
  renewal_period_days: z.number(),
  highlighted: z.boolean(),
  public: z.boolean(),
  active: z.boolean(),
  /** Access to the cluster the tier sells; null = none. */
  access: AccessEntitlements.nullable(),
  created_at: z.number(),
  updated_at: z.number(),
})
export type PolicyView = z.infer<typeof PolicyView>

export const LicenseStatus = z.enum(['active', 'suspended', 'revoked'])
export type LicenseStatus = z.infer<typeof LicenseStatus>

export const MachineView = z.object({
  id: z.string(),
  license_id: z.string(),
  fingerprint_hash: z.string(),
  hostname: z.string().nullable(),
  platform: z.string().nullable(),
  last_ip: z.string().nullable(),
  status: z.enum(['active', 'inactive']),
  activated_at: z.number(),
  last_heartbeat_at: z.number(),
  deactivated_at: z.number().nullable(),
  deactivation_reason: z.string().nullable(),
  product_slug: z.string(),
  product_name: z.string(),
})
export type MachineView = z.infer<typeof MachineView>

export const LicenseView = z.object({
  id: z.string(),
  product_id: z.string(),
  product_slug: z.string(),
  product_name: z.string(),
  policy_id: z.string().nullable(),
  policy_slug: z.string().nullable(),
  policy_name: z.string().nullable(),
  invoice_id: z.string().nullable(),
  status: LicenseStatus,
  status_reason: z.string().nullable(),
  source: z.enum(['purchase', 'complimentary', 'redeem']),
  issued_at: z.number(),
  expires_at: z.number().nullable(),
  grace_period_days: z.number(),
  max_machines: z.number(),
  entitlements: z.array(z.string()),
  is_trial: z.boolean(),
  bound: z.boolean(),
  buyer_email: z.string().nullable(),
  buyer_note: z.string().nullable(),
  active_machines: z.number(),
  updated_at: z.number(),
})
export type LicenseView = z.infer<typeof LicenseView>

export const DiscountKind = z.enum(['percent', 'fixed_sats', 'set_price', 'free_license'])
export type DiscountKind = z.infer<typeof DiscountKind>

export const DiscountView = z.object({
  id: z.string(),
  code: z.string(),
  kind: DiscountKind,
  /** percent: 1–100; fixed_sats / set_price: smallest unit of discount_currency; free_license: 0. */
  value: z.number(),
  discount_currency: Currency,
  product_id: z.string().nullable(),
  /** The scope's product name; null for a code valid on every product. */
  product_name: z.string().nullable(),
  policy_id: z.string().nullable(),
  max_redemptions: z.number().nullable(),
  /** Settled uses. */
  redemption_count: z.number(),
  /** Reserved by unpaid invoices. */
  pending_count: z.number(),
  /** Settled uses beyond max_redemptions (late payments honoured after their reservation lapsed). */
  over_cap_by: z.number(),
  /** The settled invoices that went over the cap. */
  over_cap_invoices: z.array(z.string()),
  expires_at: z.number().nullable(),
  active: z.boolean(),
  note: z.string(),
  created_at: z.number(),
  updated_at: z.number(),
})
export type DiscountView = z.infer<typeof DiscountView>

/** A price for one product tier, as the purchase flow stores it on the invoice. */
export const Quote = z.object({
  product_id: z.string(),
  product_slug: z.string(),
  policy_id: z.string(),
  policy_slug: z.string(),
  listed_currency: Currency,
  /** Before the discount, smallest unit of listed_currency. */
  base_value: z.number(),
  discount_code_id: z.string().nullable(),
  discount_code: z.string().nullable(),
  /** How much the code took off, in listed_currency. */
  discount_value: z.number(),
  /** What the buyer pays, in listed_currency. */
  listed_value: z.number(),
  amount_sats: z.number(),
  /** NULL for SAT and BTC (identity conversion). */
  exchange_rate_centibps: z.number().nullable(),
  exchange_rate_source: z.string().nullable(),
  free: z.boolean(),
})
export type Quote = z.infer<typeof Quote>

export const RateView = z.object({
  currency: z.enum(['USD', 'EUR']),
  /** Fiat units per BTC × 10,000. */
  centibps: z.number(),
  source: z.string(),
  fetched_at: z.number(),
})
export type RateView = z.infer<typeof RateView>

export const RateSourceView = z.object({
  name: z.enum(['kraken', 'coinbase', 'coingecko']),
  base_url: z.string(),
  last_ok_at: z.number().nullable(),
  last_error: z.string().nullable(),
  last_error_at: z.number().nullable(),
})

export const AuditEntry = z.object({
  id: z.number(),
  at: z.number(),
  actor: z.enum(['admin', 'buyer', 'system', 'provider']),
  action: z.string(),
  target_type: z.string().nullable(),
  target_id: z.string().nullable(),
  details: z.record(z.string(), z.unknown()),
  /** How an admin or buyer action came: over HTTP or from the desktop window; null for system and provider entries. */
  via: z.enum(['http', 'ipc']).nullable(),
  /** The caller's address and user agent (HTTP only). */
  client_ip: z.string().nullable(),
  user_agent: z.string().nullable(),
})
export type AuditEntry = z.infer<typeof AuditEntry>
