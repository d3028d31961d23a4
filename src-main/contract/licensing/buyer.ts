import { z } from 'zod'
import { method, type ContractTable } from '../define'
import { blankToUndefined, HttpUrl } from './payments'
import {
  AccessQuota,
  buyerSurface as pub,
  Currency,
  Email,
  EntitlementDef,
  Fingerprint,
  Hostname,
  KeyText,
  LicenseStatus,
  Note,
  Platform,
  Reason,
  Slug,
  Uuid,
} from './schemas'

/** The buyer API: wire-compatible with the Keysat client SDKs (snake_case fields, RFC 3339 times). */

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
  /**
   * Effective price in the smallest unit of the tier's listed currency (sats for SAT/BTC, cents for
   * USD/EUR), as the Keysat SDKs document `PublicPolicy.priceSats`; `price_currency` says which.
   */
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
  /** A license whose tier sells access to the cluster: its tokens this period (extra to Keysat's answer). */
  access: AccessQuota.optional(),
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
  product_name: z.string(),
  policy_slug: z.string().nullable(),
  policy_name: z.string().nullable(),
  status: LicenseStatus,
  issued_at: z.string(),
  expires_at: z.string().nullable(),
  grace_until: z.string().nullable(),
  is_trial: z.boolean(),
  entitlements: z.array(z.string()),
  max_machines: z.number(),
  active_machines: z.number(),
  /** On a tier that sells access: the tokens this period (the recover page shows them). */
  access: AccessQuota.nullable().optional(),
})
export type RecoverResponse = z.infer<typeof RecoverResponse>

/**
 * `{license_key}` (`key` is the older name, kept as an alias), or Keysat's `{invoice_id, email}`:
 * the e-mail the buyer gave when paying that invoice.
 */
export const RecoverInput = z
  .object({
    license_key: KeyText.optional(),
    key: KeyText.optional(),
    invoice_id: Uuid.optional(),
    email: z.string().trim().pipe(Email).optional(),
  })
  .refine((r) => (r.license_key ?? r.key) !== undefined || (r.invoice_id !== undefined && r.email !== undefined), {
    message: 'send license_key, or invoice_id and email',
  })
export type RecoverInput = z.infer<typeof RecoverInput>

/**
 * The buyer's gateway key for a license whose tier sells access to the cluster (issue 45): a new
 * secret, shown in this answer only (the old one is refused from the next request), and the
 * tier's limits it carries.
 */
export const GatewayKeyResponse = z.object({
  ok: z.literal(true),
  license_id: z.string(),
  gateway_key: z.string(),
  key_prefix: z.string(),
  models: z.array(z.string()).nullable(),
  tokens_per_period: z.number().nullable(),
  requests_per_minute: z.number().nullable(),
  concurrent_streams: z.number().nullable(),
})
export type GatewayKeyResponse = z.infer<typeof GatewayKeyResponse>

/** `POST /v1/top-ups`: the license to top up by its key; `redirect_url` is checked like a purchase's. */
export const TopUpInput = z.object({
  license_key: KeyText,
  redirect_url: blankToUndefined(HttpUrl).or(z.null().transform(() => undefined)),
})
export type TopUpInput = z.infer<typeof TopUpInput>

/** A bought top-up's invoice: pay it at `checkout_url`; the tokens count once it settles. */
export const TopUpStarted = z.object({
  ok: z.literal(true),
  license_id: z.string(),
  invoice_id: z.string(),
  provider_invoice_id: z.string(),
  checkout_url: z.string(),
  /** Tokens added to the license's current period when paid. */
  tokens: z.number(),
  listed_currency: Currency,
  listed_value: z.number(),
  amount_sats: z.number(),
  poll_url: z.string(),
})
export type TopUpStarted = z.infer<typeof TopUpStarted>

export const DiscountPreviewInput = z.object({
  product: Slug,
  code: z.string().trim().min(1).max(64),
  policy_slug: Slug.optional(),
  policy: Slug.optional(),
})

/** A discount code applied to a tier, priced like a purchase (nothing reserved). */
export const DiscountPreview = z.object({
  product: z.string(),
  policy_slug: z.string(),
  code: z.string(),
  kind: z.enum(['percent', 'fixed_sats', 'set_price', 'free_license']),
  /** Smallest unit of listed_currency. */
  listed_currency: Currency,
  base_value: z.number(),
  discount_value: z.number(),
  listed_value: z.number(),
  base_price_sats: z.number(),
  discount_applied_sats: z.number(),
  amount_sats: z.number(),
  free: z.boolean(),
})
export type DiscountPreview = z.infer<typeof DiscountPreview>

/** The SDKs send null for what they do not know. */
export const ValidateInput = z.object({
  key: KeyText,
  product_slug: z.string().max(64).nullish(),
  fingerprint: z.string().max(1024).nullish(),
  hostname: Hostname.nullish(),
  platform: Platform.nullish(),
})
export type ValidateInput = z.infer<typeof ValidateInput>

export const licensingBuyerContract = {
  licPubkey: method({
    ...pub,
    summary: 'The issuer public key (PEM) that verifies license keys offline',
    http: 'GET /v1/pubkey',
    input: z.object({}),
    output: z.object({ algorithm: z.literal('ed25519'), public_key_pem: z.string() }),
  }),
  licIssuerPublicKey: method({
    ...pub,
    summary: 'The issuer public key with its algorithm and the key format version new keys are signed in',
    http: 'GET /v1/issuer/public-key',
    input: z.object({}),
    output: z.object({
      public_key_pem: z.string(),
      key_algorithm: z.literal('ed25519'),
      key_format_version: z.number(),
    }),
  }),
  licHealthz: method({
    ...pub,
    summary: "The licensing server's liveness answer, as Keysat's /healthz",
    http: 'GET /healthz',
    input: z.object({}),
    output: z.object({ ok: z.literal(true) }),
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
    limit: 'redeem',
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
      /** The buyer's gateway key when the tier sells access (shown here only), else null. */
      gateway_key: z.string().nullable(),
    }),
  }),
  licValidate: method({
    ...pub,
    summary: 'Server-side validation of a license key (always 200; ok:false with a reason)',
    http: 'POST /v1/validate',
    input: ValidateInput,
    output: ValidateResponse,
    // The SDKs read every refusal from a 200 body.
    badInputAnswer: { ok: false, reason: 'bad_format' },
    rateLimitedAnswer: { ok: false, reason: 'rate_limited' },
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
    summary:
      "A license's current state and a freshly signed key, by its signed key or by the invoice id and the buyer's e-mail",
    http: 'POST /v1/recover',
    limit: 'recover',
    input: RecoverInput,
    output: RecoverResponse,
  }),
  licGatewayKey: method({
    ...pub,
    summary:
      'A new secret for the gateway key of a license whose tier sells access to the cluster, by its license key (issued if it has none; the old secret stops at its next request)',
    http: 'POST /v1/gateway-key',
    limit: 'recover',
    input: z.object({ license_key: KeyText }),
    output: GatewayKeyResponse,
  }),
  licBuyTopUp: method({
    ...pub,
    summary:
      "Buy the top-up pack of an access license's tier: an invoice that adds its tokens to the current period once paid (works at once, even over quota)",
    http: 'POST /v1/top-ups',
    input: TopUpInput,
    output: TopUpStarted,
  }),
  licDiscountPreview: method({
    ...pub,
    summary: 'What a discount code makes of a tier price, without reserving a use',
    http: 'POST /v1/discount-codes/preview',
    input: DiscountPreviewInput,
    output: DiscountPreview,
  }),
} satisfies ContractTable
