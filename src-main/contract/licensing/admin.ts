import { z } from 'zod'
import { page, pageOf } from '../page'
import { method, type ContractTable } from '../define'
import {
  AccessEntitlementsInput,
  AccessLicenseRow,
  AccessModelRevenue,
  AccessQuota,
  AccessTotals,
  AuditEntry,
  Currency,
  DiscountKind,
  DiscountView,
  Email,
  EntitlementDef,
  EntitlementSlug,
  LicenseStatus,
  LicenseView,
  MachineView,
  MinorUnits,
  Note,
  PolicyView,
  ProductView,
  Quote,
  RateSourceView,
  RateView,
  Reason,
  ReturnUrlPrefix,
  Slug,
  patchOf,
  TopUpTokens,
} from './schemas'

/** The licensing admin API under /v1/admin (control error style, times as epoch milliseconds). */

export const Id = z.string().min(1).max(64)
/** A GET flag: "true"/"false" (and 1/0, yes/no) from a query string over HTTP, a boolean over IPC. */
export const QueryBool = z.union([z.boolean(), z.stringbool()])
export const Ok = z.object({ ok: z.literal(true) })

export const ProductInput = z.object({
  slug: Slug,
  name: z.string().min(1).max(200),
  description: z.string().max(5000).default(''),
  price_currency: Currency.default('SAT'),
  price_value: MinorUnits.default(0),
  entitlements_catalog: z.array(EntitlementDef).max(255).default([]),
  active: z.boolean().default(true),
  return_url_prefix: ReturnUrlPrefix.nullable().default(null),
})
export type ProductInput = z.infer<typeof ProductInput>
export const ProductPatch = patchOf(ProductInput)
export type ProductPatch = z.infer<typeof ProductPatch>

const ListedPrice = z.object({ currency: Currency, value: z.number() })
/** One tier's listed price before and after a product change; `pinned` keeps its own currency. */
export const TierPriceEffect = z.object({
  policy_id: z.string(),
  slug: z.string(),
  name: z.string(),
  before: ListedPrice,
  after: ListedPrice,
  pinned: z.boolean(),
  changed: z.boolean(),
})
export type TierPriceEffect = z.infer<typeof TierPriceEffect>

export const PolicyFields = z.object({
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
  /** Access to the cluster (a gateway key for the buyer); null = none. */
  access: AccessEntitlementsInput.nullable().default(null),
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

/** Direction of a list's sort. */
export const SortOrder = z.enum(['asc', 'desc'])
export type SortOrder = z.infer<typeof SortOrder>
/** Free-text search of a list: blank means no filter. No NUL: SQLite's LIKE would end the pattern there. */
export const SearchText = z
  .string()
  .trim()
  .max(200)
  .refine((s) => !s.includes('\0'), 'no NUL bytes')
  .optional()

export const LicenseSort = z.enum(['issued_at', 'expires_at', 'updated_at', 'buyer_email', 'status', 'product'])
export const LicenseFilter = z.object({
  /** Matches license id, buyer email, invoice id, note, or product name/slug. */
  q: SearchText,
  product_id: Id.optional(),
  status: LicenseStatus.optional(),
  sort: LicenseSort.default('issued_at'),
  order: SortOrder.default('desc'),
})
export type LicenseFilter = z.infer<typeof LicenseFilter>
export const LicenseQuery = LicenseFilter.extend(pageOf(100, 500))
export type LicenseQuery = z.infer<typeof LicenseQuery>

export const ProductSort = z.enum(['created_at', 'updated_at', 'name', 'slug'])
export const ProductQuery = z.object({
  /** Matches product name or slug. */
  q: SearchText,
  sort: ProductSort.default('created_at'),
  order: SortOrder.default('desc'),
  ...pageOf(100, 500),
})
export type ProductQuery = z.infer<typeof ProductQuery>

export const DiscountSort = z.enum(['created_at', 'code', 'kind', 'expires_at', 'product'])
export const DiscountQuery = z.object({
  /** Matches the code, or the name or slug of the product it is scoped to. */
  q: SearchText,
  sort: DiscountSort.default('created_at'),
  order: SortOrder.default('desc'),
  ...pageOf(100, 500),
})
export type DiscountQuery = z.infer<typeof DiscountQuery>

export const MachineSort = z.enum(['last_heartbeat_at', 'activated_at', 'hostname', 'status'])
export type MachineSort = z.infer<typeof MachineSort>

/** A CSV export of a list: RFC 4180 text (CRLF rows, a header row), and a file name to save it under. */
export const CsvExport = z.object({ filename: z.string(), rows: z.number(), csv: z.string() })
export type CsvExport = z.infer<typeof CsvExport>
/** Largest export; a bigger result asks the operator to narrow the filter. */
export const CSV_MAX_ROWS = 100_000

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
    summary: 'Products, newest first (sortable, searchable, paged)',
    http: 'GET /v1/admin/products',
    input: ProductQuery,
    output: page('products', ProductView),
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
  licAdminProductPriceEffect: method({
    summary: "What a product price change would do to its tiers' prices, before saving",
    http: 'POST /v1/admin/products/:id/price-effect',
    input: z.object({ id: Id, price_currency: Currency.optional(), price_value: MinorUnits.optional() }),
    output: z.array(TierPriceEffect),
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
    summary: 'Search licenses (sortable, paged)',
    http: 'GET /v1/admin/licenses',
    input: LicenseQuery,
    output: page('licenses', LicenseView),
  }),
  licAdminExportLicenses: method({
    summary: 'Licenses matching a filter as CSV',
    http: 'GET /v1/admin/export/licenses',
    input: LicenseFilter,
    output: CsvExport,
  }),
  licAdminLicense: method({
    summary: 'One license with its machines (and, on a tier that sells access, its tokens this period)',
    http: 'GET /v1/admin/licenses/:id',
    input: z.object({ id: Id }),
    output: z.object({ license: LicenseView, machines: z.array(MachineView), access: AccessQuota.nullable() }),
  }),
  licAdminTopUp: method({
    summary: "Add tokens to an access license's current period (works at once, even over quota)",
    http: 'POST /v1/admin/licenses/:id/top-ups',
    input: z.object({ id: Id, tokens: TopUpTokens }),
    output: AccessQuota,
  }),
  licAdminAccess: method({
    summary:
      'The access licenses this period: totals (tokens sold vs used), revenue per model, top consumers, and the licenses (paged, most tokens used first)',
    http: 'GET /v1/admin/access',
    input: z.object(pageOf(50, 500)),
    output: page('licenses', AccessLicenseRow).extend({
      totals: AccessTotals,
      revenue: z.array(AccessModelRevenue),
      top_consumers: z.array(AccessLicenseRow),
    }),
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
    output: z.object({
      license: LicenseView,
      license_key: z.string(),
      /** The buyer's gateway key when the tier sells access: shown here once, kept only hashed. */
      gateway_key: z.string().nullable(),
    }),
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
    summary: 'Machines, newest heartbeat first (sortable, searchable, paged)',
    http: 'GET /v1/admin/machines',
    input: z.object({
      license_id: Id.optional(),
      include_inactive: QueryBool.optional(),
      /** Matches machine id, license id, hostname, platform, address, or product name/slug. */
      q: SearchText,
      sort: MachineSort.default('last_heartbeat_at'),
      order: SortOrder.default('desc'),
      ...pageOf(500, 5000),
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
    summary: 'Discount codes, newest first (sortable, searchable, paged)',
    http: 'GET /v1/admin/discount-codes',
    input: DiscountQuery,
    output: page('discounts', DiscountView),
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
    summary: 'Audit log, newest first (searchable, paged)',
    http: 'GET /v1/admin/audit',
    input: z.object({
      before_id: z.coerce.number().int().min(1).optional(),
      action: z.string().max(100).optional(),
      target_id: z.string().max(64).optional(),
      /** Matches action, actor, target or details. */
      q: SearchText,
      order: SortOrder.default('desc'),
      ...pageOf(200, 1000),
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
