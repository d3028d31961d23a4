import { z } from 'zod'
import { page, pageOf } from '../page'
import { method, type ContractTable } from '../define'
import { CsvExport, Id, SearchText, SortOrder } from './admin'
import { blankToUndefined, HttpUrl } from './payments'
import { buyerSurface as pub, Currency, KeyText, Reason, Slug } from './schemas'

/**
 * Subscriptions and tier changes (spec 001, 2.5, 2.6, 3, 4.1, 4.3): the buyer's upgrade quote,
 * upgrade and cancel (wire-compatible with the Keysat clients: `license_key`, `target_policy_slug`),
 * and the operator's subscription list, cancel and tier changes.
 */

/** Buyer bodies carry the signed key as `license_key` (the SDKs' name) or `key`; handlers get `license_key`. */
const keyFields = { license_key: KeyText.optional(), key: KeyText.optional() }
const hasKey = (v: { license_key?: string; key?: string }): boolean =>
  v.license_key !== undefined || v.key !== undefined
const keyMissing = { message: 'license_key is required', path: ['license_key'] }
const keyOf = (v: { license_key?: string; key?: string }): string => v.license_key ?? v.key ?? ''

export const TierTargetInput = z
  .object({ ...keyFields, target_policy_slug: Slug })
  .refine(hasKey, keyMissing)
  .transform((v) => ({ license_key: keyOf(v), target_policy_slug: v.target_policy_slug }))

/** `POST /v1/upgrade`: as the quote, plus Keysat's optional `redirect_url` (checked like a purchase's). */
export const UpgradeInput = z
  .object({
    ...keyFields,
    target_policy_slug: Slug,
    redirect_url: blankToUndefined(HttpUrl).or(z.null().transform(() => undefined)),
  })
  .refine(hasKey, keyMissing)
  .transform((v): { license_key: string; target_policy_slug: string; redirect_url?: string } => ({
    license_key: keyOf(v),
    target_policy_slug: v.target_policy_slug,
    redirect_url: v.redirect_url,
  }))
export type UpgradeInput = z.infer<typeof UpgradeInput>

export const BuyerKeyInput = z
  .object(keyFields)
  .refine(hasKey, keyMissing)
  .transform((v) => ({ license_key: keyOf(v) }))

export const SubscriptionStatus = z.enum(['active', 'past_due', 'cancelled', 'lapsed'])

/** Keysat's quote fields, plus ours (`ok`, `license_id`, `amount_sats`, `next_renewal_value`, `next_renewal_at`). */
export const UpgradeQuote = z.object({
  ok: z.literal(true),
  license_id: z.string(),
  from_policy_id: z.string(),
  from_policy_slug: z.string(),
  to_policy_id: z.string(),
  to_policy_slug: z.string(),
  direction: z.enum(['upgrade', 'downgrade']),
  listed_currency: Currency,
  /** Due now, in the smallest unit of the listed currency. */
  proration_charge_value: z.number(),
  /** The same in sats at the current rate. */
  amount_sats: z.number(),
  /** `"immediate"` (on payment), or RFC 3339: the next renewal, for a recurring downgrade. */
  effective_at: z.string(),
  /** Keysat's name for next_renewal_value: what each renewal charges after the change; null when none follows. */
  next_renewal_charge: z.number().nullable(),
  /** The target tier's renewal period when a renewal follows, else null. */
  next_renewal_period_days: z.number().nullable(),
  /** The charge of the next renewal after the change; null for a perpetual license. */
  next_renewal_value: z.number().nullable(),
  next_renewal_at: z.string().nullable(),
})

export const UpgradeStarted = z.object({
  ok: z.literal(true),
  invoice_id: z.string(),
  /** The provider's invoice/order id. */
  provider_invoice_id: z.string(),
  checkout_url: z.string(),
  amount_sats: z.number(),
  proration_charge_value: z.number(),
  listed_currency: Currency,
  tier_change_id: z.string(),
  from_policy_slug: z.string(),
  to_policy_slug: z.string(),
  poll_url: z.string(),
})

export const SubscriptionSort = z.enum(['created_at', 'next_renewal_at', 'status', 'buyer_email', 'product'])
export const SubscriptionFilter = z.object({
  status: SubscriptionStatus.optional(),
  /** Matches subscription or license id, buyer email, or product name/slug. */
  q: SearchText,
  sort: SubscriptionSort.default('created_at'),
  order: SortOrder.default('desc'),
})
export type SubscriptionFilter = z.infer<typeof SubscriptionFilter>
export const SubscriptionQuery = SubscriptionFilter.extend(pageOf(100, 500))
export type SubscriptionQuery = z.infer<typeof SubscriptionQuery>

export const SubscriptionView = z.object({
  id: z.string(),
  license_id: z.string(),
  product_slug: z.string(),
  product_name: z.string(),
  policy_id: z.string(),
  policy_slug: z.string(),
  policy_name: z.string(),
  buyer_email: z.string().nullable(),
  status: SubscriptionStatus,
  listed_currency: Currency,
  listed_value: z.number(),
  period_days: z.number(),
  /** When the worker next tries to bill; after a failed try, pushed out by the backoff. */
  next_renewal_at: z.number(),
  /** When the cycle being billed fell due (the end of the paid period or trial); lapse counts grace from it. */
  due_at: z.number(),
  last_renewal_attempt_at: z.number().nullable(),
  consecutive_failures: z.number(),
  /** Why renewals are backing off or stopped, for the admin. */
  failure_reason: z.string().nullable(),
  cancelled_at: z.number().nullable(),
  created_at: z.number(),
  cycles: z.array(
    z.object({ cycle_number: z.number(), invoice_id: z.string(), status: z.string(), created_at: z.number() }),
  ),
})

export const TierChangeView = z.object({
  id: z.string(),
  license_id: z.string(),
  from_policy_slug: z.string().nullable(),
  to_policy_slug: z.string(),
  direction: z.string(),
  listed_currency: Currency,
  proration_charge_value: z.number(),
  invoice_id: z.string().nullable(),
  effective_at: z.number(),
  applied_at: z.number().nullable(),
  actor: z.enum(['buyer', 'admin']),
  reason: z.string(),
  created_at: z.number(),
})

export const licensingSubscriptionsContract = {
  licUpgradeQuote: method({
    ...pub,
    summary: 'A read-only quote for moving a license to another tier',
    http: 'POST /v1/upgrade-quote',
    input: TierTargetInput,
    output: UpgradeQuote,
  }),
  licUpgrade: method({
    ...pub,
    summary: 'Start a paid tier upgrade: an invoice and a pending tier change (the license changes when paid)',
    http: 'POST /v1/upgrade',
    input: UpgradeInput,
    output: UpgradeStarted,
  }),
  licCancelSubscription: method({
    ...pub,
    summary: "Cancel the license's subscription: no further charge, valid through the current cycle",
    http: 'POST /v1/subscriptions/cancel',
    input: BuyerKeyInput,
    output: z.object({
      ok: z.literal(true),
      subscription_id: z.string(),
      status: SubscriptionStatus,
      already: SubscriptionStatus.nullable(),
    }),
  }),
  licAdminSubscriptions: method({
    summary: 'Subscriptions, newest first, with their cycles (sortable, searchable, paged)',
    http: 'GET /v1/admin/subscriptions',
    input: SubscriptionQuery,
    output: page('subscriptions', SubscriptionView, 'rows-first'),
  }),
  licAdminExportSubscriptions: method({
    summary: 'Subscriptions matching a filter as CSV',
    http: 'GET /v1/admin/export/subscriptions',
    input: SubscriptionFilter,
    output: CsvExport,
  }),
  licAdminCancelSubscription: method({
    summary: 'Cancel a subscription for the buyer',
    http: 'POST /v1/admin/subscriptions/:id/cancel',
    input: z.object({ id: Id, reason: Reason.optional() }),
    output: SubscriptionView,
  }),
  licAdminChangeTier: method({
    summary: 'Move a license to another tier: now without payment, or with an invoice to forward to the buyer',
    http: 'POST /v1/admin/licenses/:id/change-tier',
    input: z.object({
      id: Id,
      to_policy_slug: Slug,
      skip_payment: z.boolean().default(false),
      reason: Reason.default(''),
    }),
    output: z.object({
      tier_change: TierChangeView,
      invoice_id: z.string().nullable(),
      checkout_url: z.string().nullable(),
    }),
  }),
  licAdminTierChanges: method({
    summary: "A license's tier-change history, newest first",
    http: 'GET /v1/admin/licenses/:id/tier-changes',
    input: z.object({ id: Id }),
    output: z.object({ tier_changes: z.array(TierChangeView) }),
  }),
} satisfies ContractTable
