import { z } from 'zod'
import { method, type ContractTable } from './define'

/**
 * The licensing methods (see DESIGN.md, The contract, and spec 001).
 *
 * Layout of this file: shared schemas first, then the buyer API (`licensingBuyerContract`,
 * licensing error style, wire-compatible with the Keysat client SDKs: snake_case fields, RFC 3339
 * times), then the admin API (`licensingAdminContract`, `/v1/admin/*`, control error style, times
 * as epoch milliseconds), then the payments table (`licensingPaymentsContract`: purchase,
 * invoices, providers, webhook endpoints — part B's section at the end of the file).
 */

// ---- shared schemas ----

export const Currency = z.enum(['SAT', 'USD', 'EUR', 'BTC'])
export type Currency = z.infer<typeof Currency>

export const Slug = z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'lower-case letters, digits and dashes (max 64)')
export const EntitlementSlug = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/, 'letters, digits, _ . : - (max 64)')
export const Uuid = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'a UUID')
/** An amount in the smallest unit of its currency (sats, cents). */
export const MinorUnits = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)
const Email = z.email().max(254)
const Note = z.string().max(2000)
const Reason = z.string().max(500)
/** Raw machine fingerprint as the client SDKs send it (hashed with SHA-256 before storage). */
const Fingerprint = z.string().min(1).max(1024)
const Hostname = z.string().max(255)
const Platform = z.string().max(100)
/** Signed license key text; generous bound, the parser enforces the format. */
const KeyText = z.string().max(16_384)

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
  created_at: z.number(),
  updated_at: z.number(),
})
export type ProductView = z.infer<typeof ProductView>

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
})
export type MachineView = z.infer<typeof MachineView>

export const LicenseView = z.object({
  id: z.string(),
  product_id: z.string(),
  product_slug: z.string(),
  product_name: z.string(),
  policy_id: z.string().nullable(),
  policy_slug: z.string().nullable(),
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
  policy_id: z.string().nullable(),
  max_redemptions: z.number().nullable(),
  /** Settled uses. */
  redemption_count: z.number(),
  /** Reserved by unpaid invoices. */
  pending_count: z.number(),
  expires_at: z.number().nullable(),
  active: z.boolean(),
  note: z.string(),
  created_at: z.number(),
  updated_at: z.number(),
})
export type DiscountView = z.infer<typeof DiscountView>

/** A price for one product tier, as part B's purchase flow stores it on the invoice. */
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
})
export type AuditEntry = z.infer<typeof AuditEntry>

// ---- buyer API (Keysat client SDK wire shapes) ----

export const PublicProduct = z.object({
  id: z.string(),
  slug: z.string(),
  name: z.string(),
  description: z.string(),
  price_currency: Currency,
  price_value: z.number(),
  price_sats: z.number(),
  base_price_sats: z.number(),
  entitlements_catalog: z.array(EntitlementDef),
  active: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
})

export const PublicPolicy = z.object({
  slug: z.string(),
  name: z.string(),
  description: z.string(),
  /** Effective price in sats: the listed price converted at the cached rate (0 until a rate is known). */
  price_sats: z.number(),
  price_currency: Currency,
  price_value: z.number(),
  duration_seconds: z.number(),
  max_machines: z.number(),
  is_trial: z.boolean(),
  entitlements: z.array(z.string()),
  highlighted: z.boolean(),
  is_recurring: z.boolean(),
  renewal_period_days: z.number(),
  trial_days: z.number(),
  tier_rank: z.number().nullable(),
})
export type PublicPolicy = z.infer<typeof PublicPolicy>

export const ValidateResponse = z.object({
  ok: z.boolean(),
  reason: z.string().optional(),
  license_id: z.string().optional(),
  product_id: z.string().optional(),
  product_slug: z.string().optional(),
  issued_at: z.string().optional(),
  expires_at: z.string().optional(),
  grace_until: z.string().optional(),
  in_grace_period: z.boolean().optional(),
  is_trial: z.boolean().optional(),
  entitlements: z.array(z.string()).optional(),
  status: z.string().optional(),
  machine_id: z.string().optional(),
  max_machines: z.number().optional(),
})
export type ValidateResponse = z.infer<typeof ValidateResponse>

export const MachineResponse = z.object({
  ok: z.boolean(),
  reason: z.string().optional(),
  machine_id: z.string().optional(),
  active_count: z.number().optional(),
  max_machines: z.number().optional(),
})
export type MachineResponse = z.infer<typeof MachineResponse>

export const RecoverResponse = z.object({
  ok: z.literal(true),
  license_id: z.string(),
  /** A freshly signed key with the license's current entitlements and expiry; null once revoked. */
  license_key: z.string().nullable(),
  product_id: z.string(),
  product_slug: z.string(),
  policy_slug: z.string().nullable(),
  status: LicenseStatus,
  issued_at: z.string(),
  expires_at: z.string().nullable(),
  grace_until: z.string().nullable(),
  is_trial: z.boolean(),
  entitlements: z.array(z.string()),
  max_machines: z.number(),
  active_machines: z.number(),
})
export type RecoverResponse = z.infer<typeof RecoverResponse>

/** Validate never fails on input shape: every field is checked by the handler so the answer stays 200. */
const ValidateInput = z.object({
  key: z.unknown().optional(),
  product_slug: z.unknown().optional(),
  fingerprint: z.unknown().optional(),
  hostname: z.unknown().optional(),
  platform: z.unknown().optional(),
})

const pub = { errorStyle: 'licensing', httpOnly: true } as const

export const licensingBuyerContract = {
  licPubkey: method({
    ...pub,
    summary: 'The issuer public key (PEM) that verifies license keys offline',
    http: 'GET /v1/pubkey',
    input: z.object({}),
    output: z.object({ public_key_pem: z.string() }),
  }),
  licProducts: method({
    ...pub,
    summary: 'Active products',
    http: 'GET /v1/products',
    input: z.object({}),
    output: z.object({ products: z.array(PublicProduct) }),
  }),
  licProduct: method({
    ...pub,
    summary: 'One active product by slug',
    http: 'GET /v1/products/:slug',
    input: z.object({ slug: z.string().max(64) }),
    output: PublicProduct,
  }),
  licProductPolicies: method({
    ...pub,
    summary: "A product's public tiers, as the buy page shows them",
    http: 'GET /v1/products/:slug/policies',
    input: z.object({ slug: z.string().max(64) }),
    output: z.object({
      product: z.object({
        slug: z.string(),
        name: z.string(),
        description: z.string(),
        base_price_sats: z.number(),
        price_currency: Currency,
        price_value: z.number(),
        entitlements_catalog: z.array(EntitlementDef),
      }),
      policies: z.array(PublicPolicy),
    }),
  }),
  licRedeem: method({
    ...pub,
    summary: 'Redeem a free_license code for a signed key, no payment',
    http: 'POST /v1/redeem',
    input: z.object({
      product: z.string().max(64),
      code: z.string().min(1).max(64),
      policy: z.string().max(64).nullish(),
      policy_slug: z.string().max(64).nullish(),
      buyer_email: Email.nullish(),
      buyer_note: Note.nullish(),
    }),
    output: z.object({
      license_id: z.string(),
      license_key: z.string(),
      invoice_id: z.string(),
      redemption_id: z.string(),
    }),
  }),
  licValidate: method({
    ...pub,
    summary: 'Server-side validation of a license key (always 200; ok:false with a reason)',
    http: 'POST /v1/validate',
    input: ValidateInput,
    output: ValidateResponse,
    unreadableBodyAnswer: { ok: false, reason: 'bad_format' },
  }),
  licMachineActivate: method({
    ...pub,
    summary: 'Take a seat for a machine fingerprint',
    http: 'POST /v1/machines/activate',
    input: z.object({
      key: KeyText,
      fingerprint: Fingerprint,
      hostname: Hostname.nullish(),
      platform: Platform.nullish(),
    }),
    output: MachineResponse,
  }),
  licMachineHeartbeat: method({
    ...pub,
    summary: "Refresh an activated machine's last-seen time",
    http: 'POST /v1/machines/heartbeat',
    input: z.object({ key: KeyText, fingerprint: Fingerprint }),
    output: MachineResponse,
  }),
  licMachineDeactivate: method({
    ...pub,
    summary: 'Free the seat held by a machine fingerprint',
    http: 'POST /v1/machines/deactivate',
    input: z.object({ key: KeyText, fingerprint: Fingerprint, reason: Reason.nullish() }),
    output: MachineResponse,
  }),
  licRecover: method({
    ...pub,
    summary: "A license's current state and a freshly signed key, by its signed key",
    http: 'POST /v1/recover',
    input: z.object({ key: KeyText }),
    output: RecoverResponse,
  }),
} satisfies ContractTable

// ---- admin API ----

const Id = z.string().min(1).max(64)
/** A GET flag: "true"/"false" (and 1/0, yes/no) from a query string over HTTP, a boolean over IPC. */
const QueryBool = z.union([z.boolean(), z.stringbool()])
const Ok = z.object({ ok: z.literal(true) })

export const ProductInput = z.object({
  slug: Slug,
  name: z.string().min(1).max(200),
  description: z.string().max(5000).default(''),
  price_currency: Currency.default('SAT'),
  price_value: MinorUnits.default(0),
  entitlements_catalog: z.array(EntitlementDef).max(255).default([]),
  active: z.boolean().default(true),
})
export type ProductInput = z.infer<typeof ProductInput>
export const ProductPatch = patchOf(ProductInput)
export type ProductPatch = z.infer<typeof ProductPatch>

const PolicyFields = z.object({
  slug: Slug,
  name: z.string().min(1).max(200),
  description: z.string().max(5000).default(''),
  tier_rank: z.number().int().min(0).max(1_000_000).nullable().default(null),
  /** NULL inherits the product's currency. */
  price_currency_override: Currency.nullable().default(null),
  /** NULL inherits the product's price. */
  price_value_override: MinorUnits.nullable().default(null),
  entitlements: z.array(EntitlementSlug).max(255).default([]),
  /** 0 = unlimited. */
  max_machines: z.number().int().min(0).max(100_000).default(1),
  /** 0 = perpetual. */
  duration_days: z.number().int().min(0).max(36_500).default(0),
  grace_period_days: z.number().int().min(0).max(3650).default(7),
  is_trial: z.boolean().default(false),
  trial_days: z.number().int().min(0).max(3650).default(0),
  is_recurring: z.boolean().default(false),
  renewal_period_days: z.number().int().min(0).max(3650).default(0),
  highlighted: z.boolean().default(false),
  public: z.boolean().default(true),
  active: z.boolean().default(true),
})
export const PolicyInput = PolicyFields
export type PolicyInput = z.infer<typeof PolicyInput>
export const PolicyPatch = patchOf(PolicyFields)
export type PolicyPatch = z.infer<typeof PolicyPatch>

export const DiscountInput = z.object({
  code: z.string().regex(/^[A-Za-z0-9_-]{2,64}$/, 'letters, digits, _ and - (2–64)'),
  kind: DiscountKind,
  value: MinorUnits.default(0),
  discount_currency: Currency.default('SAT'),
  product_id: Id.nullable().default(null),
  policy_id: Id.nullable().default(null),
  max_redemptions: z.number().int().min(0).nullable().default(null),
  expires_at: z.number().int().min(0).nullable().default(null),
  active: z.boolean().default(true),
  note: z.string().max(1000).default(''),
})
export type DiscountInput = z.infer<typeof DiscountInput>
export const DiscountPatch = patchOf(DiscountInput)
export type DiscountPatch = z.infer<typeof DiscountPatch>

export const LicenseQuery = z.object({
  /** Matches license id, buyer email, invoice id or note. */
  q: z.string().max(200).optional(),
  product_id: Id.optional(),
  status: LicenseStatus.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
  offset: z.coerce.number().int().min(0).default(0),
})
export type LicenseQuery = z.infer<typeof LicenseQuery>

export const AnalyticsView = z.object({
  from_day: z.string(),
  to_day: z.string(),
  revenue: z.array(
    z.object({
      day: z.string(),
      product_id: z.string(),
      product_slug: z.string(),
      currency: Currency,
      /** Sum of listed_value in `currency` (SAT invoices: sats). */
      listed_value: z.number(),
      amount_sats: z.number(),
      invoices: z.number(),
    }),
  ),
  licenses_issued: z.array(
    z.object({ day: z.string(), product_id: z.string(), product_slug: z.string(), count: z.number() }),
  ),
  active_machines: z.number(),
  active_licenses: z.number(),
  totals: z.object({ amount_sats: z.number(), licenses_issued: z.number(), invoices_settled: z.number() }),
})
export type AnalyticsView = z.infer<typeof AnalyticsView>

export const licensingAdminContract = {
  licAdminProducts: method({
    summary: 'All products',
    http: 'GET /v1/admin/products',
    input: z.object({}),
    output: z.array(ProductView),
  }),
  licAdminProduct: method({
    summary: 'One product with its policies',
    http: 'GET /v1/admin/products/:id',
    input: z.object({ id: Id }),
    output: z.object({ product: ProductView, policies: z.array(PolicyView) }),
  }),
  licAdminCreateProduct: method({
    summary: 'Create a product',
    http: 'POST /v1/admin/products',
    input: ProductInput,
    output: ProductView,
  }),
  licAdminUpdateProduct: method({
    summary: 'Change a product',
    http: 'PATCH /v1/admin/products/:id',
    input: ProductPatch.extend({ id: Id }),
    output: ProductView,
  }),
  licAdminDeleteProduct: method({
    summary: 'Delete a product that never sold (otherwise deactivate it)',
    http: 'DELETE /v1/admin/products/:id',
    input: z.object({ id: Id }),
    output: Ok,
  }),
  licAdminPolicies: method({
    summary: "A product's policies (the tier ladder), best tier first",
    http: 'GET /v1/admin/products/:product_id/policies',
    input: z.object({ product_id: Id }),
    output: z.array(PolicyView),
  }),
  licAdminCreatePolicy: method({
    summary: 'Add a policy (tier) to a product',
    http: 'POST /v1/admin/products/:product_id/policies',
    input: PolicyInput.extend({ product_id: Id }),
    output: PolicyView,
  }),
  licAdminUpdatePolicy: method({
    summary: 'Change a policy',
    http: 'PATCH /v1/admin/policies/:id',
    input: PolicyPatch.extend({ id: Id }),
    output: PolicyView,
  }),
  licAdminDeletePolicy: method({
    summary: 'Delete a policy no license or invoice uses (otherwise deactivate it)',
    http: 'DELETE /v1/admin/policies/:id',
    input: z.object({ id: Id }),
    output: Ok,
  }),
  licAdminLicenses: method({
    summary: 'Search licenses',
    http: 'GET /v1/admin/licenses',
    input: LicenseQuery,
    output: z.object({ total: z.number(), licenses: z.array(LicenseView) }),
  }),
  licAdminLicense: method({
    summary: 'One license with its machines',
    http: 'GET /v1/admin/licenses/:id',
    input: z.object({ id: Id }),
    output: z.object({ license: LicenseView, machines: z.array(MachineView) }),
  }),
  licAdminIssueLicense: method({
    summary: 'Issue a complimentary license',
    http: 'POST /v1/admin/licenses',
    input: z.object({
      product_id: Id,
      policy_id: Id.nullish(),
      buyer_email: Email.nullish(),
      buyer_note: Note.nullish(),
    }),
    output: z.object({ license: LicenseView, license_key: z.string() }),
  }),
  licAdminRevokeLicense: method({
    summary: 'Revoke a license (final)',
    http: 'POST /v1/admin/licenses/:id/revoke',
    input: z.object({ id: Id, reason: Reason.nullish() }),
    output: LicenseView,
  }),
  licAdminSuspendLicense: method({
    summary: 'Suspend a license (reversible)',
    http: 'POST /v1/admin/licenses/:id/suspend',
    input: z.object({ id: Id, reason: Reason.nullish() }),
    output: LicenseView,
  }),
  licAdminReinstateLicense: method({
    summary: 'Reinstate a suspended license',
    http: 'POST /v1/admin/licenses/:id/reinstate',
    input: z.object({ id: Id }),
    output: LicenseView,
  }),
  licAdminLicenseKey: method({
    summary: 'A freshly signed key for a license (current entitlements), e.g. to resend it to the buyer',
    http: 'GET /v1/admin/licenses/:id/key',
    input: z.object({ id: Id }),
    output: z.object({ license_key: z.string() }),
  }),
  licAdminMachines: method({
    summary: 'Machines, newest heartbeat first',
    http: 'GET /v1/admin/machines',
    input: z.object({
      license_id: Id.optional(),
      include_inactive: QueryBool.optional(),
      limit: z.coerce.number().int().min(1).max(5000).default(500),
    }),
    output: z.array(MachineView),
  }),
  licAdminDeactivateMachine: method({
    summary: 'Free a seat',
    http: 'POST /v1/admin/machines/:id/deactivate',
    input: z.object({ id: Id, reason: Reason.nullish() }),
    output: MachineView,
  }),
  licAdminDiscounts: method({
    summary: 'Discount codes',
    http: 'GET /v1/admin/discount-codes',
    input: z.object({}),
    output: z.array(DiscountView),
  }),
  licAdminCreateDiscount: method({
    summary: 'Create a discount code',
    http: 'POST /v1/admin/discount-codes',
    input: DiscountInput,
    output: DiscountView,
  }),
  licAdminUpdateDiscount: method({
    summary: 'Change a discount code',
    http: 'PATCH /v1/admin/discount-codes/:id',
    input: DiscountPatch.extend({ id: Id }),
    output: DiscountView,
  }),
  licAdminDeleteDiscount: method({
    summary: 'Delete a discount code never used (otherwise deactivate it)',
    http: 'DELETE /v1/admin/discount-codes/:id',
    input: z.object({ id: Id }),
    output: Ok,
  }),
  licAdminQuote: method({
    summary: 'Price a tier (with an optional code) exactly as a purchase would',
    http: 'POST /v1/admin/quote',
    input: z.object({
      product: z.string().max(64),
      policy: z.string().max(64).nullish(),
      code: z.string().max(64).nullish(),
    }),
    output: Quote,
  }),
  licAdminRates: method({
    summary: 'Current BTC exchange rates and the state of each source',
    http: 'GET /v1/admin/rates',
    input: z.object({ refresh: QueryBool.optional() }),
    output: z.object({ rates: z.array(RateView), errors: z.array(z.string()), sources: z.array(RateSourceView) }),
  }),
  licAdminAudit: method({
    summary: 'Audit log, newest first',
    http: 'GET /v1/admin/audit',
    input: z.object({
      limit: z.coerce.number().int().min(1).max(1000).default(200),
      before_id: z.coerce.number().int().min(1).optional(),
      action: z.string().max(100).optional(),
      target_id: z.string().max(64).optional(),
    }),
    output: z.array(AuditEntry),
  }),
  licAdminAnalytics: method({
    summary: 'Revenue per day per product and currency, licenses issued, active machines',
    http: 'GET /v1/admin/analytics',
    input: z.object({ days: z.coerce.number().int().min(1).max(366).default(30) }),
    output: AnalyticsView,
  }),
  licAdminIssuerKey: method({
    summary: 'The issuer public key',
    http: 'GET /v1/admin/issuer-key',
    input: z.object({}),
    output: z.object({ public_key_pem: z.string() }),
  }),
  licAdminImportIssuerKey: method({
    summary: 'Replace the issuer key with an Ed25519 private key (PEM); keys signed by the old one stop verifying',
    http: 'POST /v1/admin/issuer-key',
    input: z.object({ private_key_pem: z.string().min(1).max(10_000) }),
    output: z.object({ public_key_pem: z.string() }),
  }),
} satisfies ContractTable

// ---- payments (part B): purchase, invoices, providers, webhook endpoints ----

const InvoiceState = z.enum(['pending', 'settled', 'expired', 'invalid'])
const ProviderName = z.enum(['btcpay', 'zaprite'])
const HttpUrl = z.url({ protocol: /^https?$/ }).max(2048)
const blankToUndefined = <T extends z.ZodType>(s: T) => s.optional().or(z.literal('').transform(() => undefined))

/** `POST /v1/purchase`: the Keysat clients send `policy_slug`, DESIGN.md names it `policy`; both work. */
export const PurchaseInput = z.object({
  product: Slug,
  policy: Slug.optional(),
  policy_slug: Slug.optional(),
  buyer_email: blankToUndefined(Email),
  buyer_note: Note.optional(),
  redirect_url: blankToUndefined(HttpUrl),
  code: blankToUndefined(z.string().trim().max(64)),
})
export type PurchaseInput = z.infer<typeof PurchaseInput>

export const PurchaseSession = z.object({
  invoice_id: z.string(),
  /** The provider's invoice/order id under the name the Keysat clients read. */
  btcpay_invoice_id: z.string().nullable(),
  provider: z.enum(['btcpay', 'zaprite', 'free']),
  provider_invoice_id: z.string().nullable(),
  checkout_url: z.string(),
  amount_sats: z.number(),
  listed_currency: Currency,
  listed_value: z.number(),
  exchange_rate_centibps: z.number().nullable(),
  exchange_rate_source: z.string().nullable(),
  poll_url: z.string(),
  status: z.enum(['pending', 'settled']),
  expires_at: z.string().nullable(),
})
export type PurchaseSession = z.infer<typeof PurchaseSession>

export const PurchaseStatus = z.object({
  invoice_id: z.string(),
  status: InvoiceState,
  product_id: z.string(),
  product_slug: z.string().nullable(),
  policy_slug: z.string().nullable(),
  amount_sats: z.number(),
  listed_currency: Currency,
  listed_value: z.number(),
  checkout_url: z.string().nullable(),
  license_key: z.string().nullable(),
  license_id: z.string().nullable(),
  expires_at: z.string().nullable(),
  settled_at: z.string().nullable(),
})
export type PurchaseStatus = z.infer<typeof PurchaseStatus>

export const InvoiceView = z.object({
  id: z.string(),
  kind: z.string(),
  product_id: z.string(),
  product_slug: z.string().nullable(),
  product_name: z.string().nullable(),
  policy_id: z.string().nullable(),
  policy_slug: z.string().nullable(),
  provider: z.string().nullable(),
  provider_invoice_id: z.string().nullable(),
  checkout_url: z.string().nullable(),
  amount_sats: z.number(),
  status: InvoiceState,
  discount_code: z.string().nullable(),
  discount_value: z.number().nullable(),
  buyer_email: z.string().nullable(),
  buyer_note: z.string().nullable(),
  license_id: z.string().nullable(),
  listed_currency: z.string().nullable(),
  listed_value: z.number().nullable(),
  exchange_rate_centibps: z.number().nullable(),
  exchange_rate_source: z.string().nullable(),
  created_at: z.number(),
  updated_at: z.number(),
  expires_at: z.number().nullable(),
  settled_at: z.number().nullable(),
})
export type InvoiceView = z.infer<typeof InvoiceView>

export const InvoiceQuery = z.object({
  status: InvoiceState.optional(),
  provider: z.enum(['btcpay', 'zaprite', 'free']).optional(),
  product: z.string().max(64).optional(),
  /** Matches the invoice id, the provider's id, or part of the buyer's email. */
  q: z.string().max(200).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
  offset: z.coerce.number().int().min(0).default(0),
})
export type InvoiceQuery = z.infer<typeof InvoiceQuery>

/** A provider connection as the admin sees it: never a credential. */
const ConnectionView = z.object({
  connected: z.boolean(),
  active: z.boolean(),
  base_url: z.string().nullable(),
  connected_at: z.number().nullable(),
  /** Where the provider must send its webhooks. */
  webhook_url: z.string(),
})
export const ProvidersStatus = z.object({
  active: ProviderName.nullable(),
  btcpay: ConnectionView.extend({ store_id: z.string().nullable(), has_webhook_secret: z.boolean() }),
  zaprite: ConnectionView,
})
export type ProvidersStatus = z.infer<typeof ProvidersStatus>

const Secret = z
  .string()
  .min(8)
  .max(256)
  .regex(/^[\x21-\x7e]+$/, 'printable characters without spaces')

export const WebhookEvent = z.string().regex(/^(\*|[a-z_]+\.[a-z_]+)$/, 'an event name like license.issued, or *')

export const WebhookEndpointInput = z.object({
  url: HttpUrl,
  /** The operator's shared signing secret: stored, never shown again. */
  secret: z.string().min(16, 'at least 16 characters').max(256),
  events: z.array(WebhookEvent).min(1).max(32).default(['*']),
  description: z.string().max(500).default(''),
  active: z.boolean().default(true),
})
export const WebhookEndpointPatch = patchOf(WebhookEndpointInput).extend({ id: Uuid })

export const WebhookEndpointView = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  description: z.string(),
  active: z.boolean(),
  created_at: z.number(),
  updated_at: z.number(),
  pending: z.number(),
  failed: z.number(),
})
export type WebhookEndpointView = z.infer<typeof WebhookEndpointView>

export const DeliveryStatus = z.enum(['pending', 'delivered', 'failed'])
export const WebhookDeliveryView = z.object({
  id: z.string(),
  endpoint_id: z.string(),
  endpoint_url: z.string(),
  event: z.string(),
  status: DeliveryStatus,
  attempts: z.number(),
  next_attempt_at: z.number().nullable(),
  last_attempt_at: z.number().nullable(),
  last_status_code: z.number().nullable(),
  last_error: z.string().nullable(),
  created_at: z.number(),
  delivered_at: z.number().nullable(),
  payload: z.string(),
})
export type WebhookDeliveryView = z.infer<typeof WebhookDeliveryView>

export const licensingPaymentsContract = {
  licPurchase: method({
    ...pub,
    summary: 'Start a purchase: a priced invoice and a checkout at the active payment provider',
    http: 'POST /v1/purchase',
    input: PurchaseInput,
    output: PurchaseSession,
  }),
  licPurchaseStatus: method({
    ...pub,
    summary: 'Poll a purchase; once settled it carries the license key',
    http: 'GET /v1/purchase/:id',
    input: z.object({ id: Uuid }),
    output: PurchaseStatus,
  }),
  licAdminInvoices: method({
    summary: 'Invoices, newest first, filtered',
    http: 'GET /v1/admin/invoices',
    input: InvoiceQuery,
    output: z.object({ items: z.array(InvoiceView), total: z.number() }),
  }),
  licAdminInvoice: method({
    summary: 'One invoice',
    http: 'GET /v1/admin/invoices/:id',
    input: z.object({ id: Id }),
    output: InvoiceView,
  }),
  licAdminRecheckInvoice: method({
    summary: 'Ask the provider about a pending or expired invoice now (settles it when paid)',
    http: 'POST /v1/admin/invoices/:id/recheck',
    input: z.object({ id: Id }),
    output: z.object({
      outcome: z.enum(['settled', 'expired', 'invalid', 'pending', 'unreachable', 'not_pending']),
      invoice: InvoiceView,
    }),
  }),
  licAdminProviders: method({
    summary: 'Both payment provider connections and which one is active',
    http: 'GET /v1/admin/providers',
    input: z.object({}),
    output: ProvidersStatus,
  }),
  licAdminActivateProvider: method({
    summary: 'Make an already-connected provider the active one',
    http: 'POST /v1/admin/providers/:provider/activate',
    input: z.object({ provider: ProviderName }),
    output: ProvidersStatus,
  }),
  licAdminBtcpayConnect: method({
    summary: 'Check BTCPay Server credentials against the store, then save them and make BTCPay active',
    http: 'POST /v1/admin/btcpay/connect',
    input: z.object({
      base_url: HttpUrl,
      store_id: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'letters, digits, _ and -'),
      api_key: Secret,
      webhook_secret: Secret,
    }),
    output: ProvidersStatus,
  }),
  licAdminBtcpayDisconnect: method({
    summary: 'Forget the BTCPay Server credentials',
    http: 'POST /v1/admin/btcpay/disconnect',
    input: z.object({}),
    output: ProvidersStatus,
  }),
  licAdminBtcpayStatus: method({
    summary: 'BTCPay Server connection snapshot',
    http: 'GET /v1/admin/btcpay/status',
    input: z.object({}),
    output: ProvidersStatus,
  }),
  licAdminZapriteConnect: method({
    summary: 'Validate a Zaprite API key by listing orders, then save it and make Zaprite active (spec: provider_b)',
    http: 'POST /v1/admin/zaprite/connect',
    input: z.object({ api_key: Secret, base_url: HttpUrl.optional() }),
    output: ProvidersStatus,
  }),
  licAdminZapriteDisconnect: method({
    summary: 'Clear the stored Zaprite credentials',
    http: 'POST /v1/admin/zaprite/disconnect',
    input: z.object({}),
    output: ProvidersStatus,
  }),
  licAdminZapriteStatus: method({
    summary: 'Zaprite connection snapshot (read-only)',
    http: 'GET /v1/admin/zaprite/status',
    input: z.object({}),
    output: ProvidersStatus,
  }),
  licAdminWebhookEndpoints: method({
    summary: 'Outbound webhook endpoints (secrets never returned)',
    http: 'GET /v1/admin/webhook-endpoints',
    input: z.object({}),
    output: z.array(WebhookEndpointView),
  }),
  licAdminCreateWebhookEndpoint: method({
    summary: 'Register an outbound webhook endpoint with its signing secret',
    http: 'POST /v1/admin/webhook-endpoints',
    input: WebhookEndpointInput,
    output: WebhookEndpointView,
  }),
  licAdminUpdateWebhookEndpoint: method({
    summary: 'Change an endpoint (URL, events, secret, active)',
    http: 'PATCH /v1/admin/webhook-endpoints/:id',
    input: WebhookEndpointPatch,
    output: WebhookEndpointView,
  }),
  licAdminDeleteWebhookEndpoint: method({
    summary: 'Remove an endpoint and its delivery log',
    http: 'DELETE /v1/admin/webhook-endpoints/:id',
    input: z.object({ id: Uuid }),
    output: Ok,
  }),
  licAdminTestWebhookEndpoint: method({
    summary: 'Queue a signed webhook.test delivery to one endpoint',
    http: 'POST /v1/admin/webhook-endpoints/:id/test',
    input: z.object({ id: Uuid }),
    output: WebhookDeliveryView,
  }),
  licAdminWebhookDeliveries: method({
    summary: 'The outbound delivery log, newest first',
    http: 'GET /v1/admin/webhook-deliveries',
    input: z.object({
      endpoint_id: Uuid.optional(),
      status: DeliveryStatus.optional(),
      limit: z.coerce.number().int().min(1).max(500).default(100),
    }),
    output: z.array(WebhookDeliveryView),
  }),
  licAdminRetryWebhookDelivery: method({
    summary: 'Send a failed delivery again now',
    http: 'POST /v1/admin/webhook-deliveries/:id/retry',
    input: z.object({ id: Uuid }),
    output: WebhookDeliveryView,
  }),
} satisfies ContractTable

export const licensingContract = {
  ...licensingBuyerContract,
  ...licensingAdminContract,
  ...licensingPaymentsContract,
} satisfies ContractTable
