import { z } from 'zod'
import { page, pageOf } from '../page'
import { method, type ContractTable } from '../define'
import { buyerSurface as pub, Currency, Email, Note, Slug, Uuid, patchOf } from './schemas'
import { CsvExport, Id, Ok, SearchText, SortOrder } from './admin'

/** Purchases, invoices, payment providers and outbound webhook endpoints. */

export const InvoiceState = z.enum(['pending', 'settled', 'expired', 'invalid'])
export const ProviderName = z.enum(['btcpay', 'zaprite'])
export const HttpUrl = z.url({ protocol: /^https?$/ }).max(2048)
export const blankToUndefined = <T extends z.ZodType>(s: T) => s.optional().or(z.literal('').transform(() => undefined))

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
  /** The provider's invoice/order id under the name the Keysat clients read; `free-<invoice id>` for a zero total. */
  btcpay_invoice_id: z.string(),
  provider: z.enum(['btcpay', 'zaprite', 'free']),
  provider_invoice_id: z.string().nullable(),
  /** The provider's checkout; empty for a zero total, which settles at once (Keysat's signal: no checkout). */
  checkout_url: z.string(),
  amount_sats: z.number(),
  /** The tier's price before any discount, in sats. */
  base_price_sats: z.number(),
  /** base_price_sats − amount_sats: what the discount code took off, in sats. */
  discount_applied_sats: z.number(),
  listed_currency: Currency,
  listed_value: z.number(),
  exchange_rate_centibps: z.number().nullable(),
  exchange_rate_source: z.string().nullable(),
  poll_url: z.string(),
  status: z.enum(['pending', 'settled']),
  expires_at: z.string().nullable(),
  /** A zero total only: the signed key, issued inline, and its license (left out otherwise, as Keysat does). */
  license_key: z.string().optional(),
  license_id: z.string().optional(),
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
  /** Once settled, while the license is active; null again once it is revoked or suspended. */
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
  policy_name: z.string().nullable(),
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
  /**
   * The provider's record disagreed with ours: underpaid (not settled), overpaid (settled), currency or
   * store mismatch (refused); or it settled with a caveat: paid_late (paid after expiry),
   * amount_unverified (the record named no amount; settled on its status).
   */
  payment_flag: z
    .enum(['underpaid', 'overpaid', 'currency_mismatch', 'store_mismatch', 'paid_late', 'amount_unverified'])
    .nullable(),
  /** Both amounts, or what did not match. */
  payment_flag_detail: z.string().nullable(),
  flagged_at: z.number().nullable(),
})
export type InvoiceView = z.infer<typeof InvoiceView>

export const InvoiceSort = z.enum(['created_at', 'settled_at', 'amount_sats', 'status', 'buyer_email', 'product'])
export const InvoiceFilter = z.object({
  status: InvoiceState.optional(),
  provider: z.enum(['btcpay', 'zaprite', 'free']).optional(),
  product: z.string().max(64).optional(),
  /** Matches the invoice id, the provider's id, or part of the buyer's email or the product's name. */
  q: SearchText,
  sort: InvoiceSort.default('created_at'),
  order: SortOrder.default('desc'),
  /** Only invoices flagged for the admin (amount, currency or store disagreed with the provider). */
  flagged: z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .or(z.boolean())
    .optional(),
})
export type InvoiceFilter = z.infer<typeof InvoiceFilter>
export const InvoiceQuery = InvoiceFilter.extend(pageOf(100, 500))
export type InvoiceQuery = z.infer<typeof InvoiceQuery>

/** A provider connection as the admin sees it: never a credential. */
export const ConnectionView = z.object({
  connected: z.boolean(),
  active: z.boolean(),
  base_url: z.string().nullable(),
  connected_at: z.number().nullable(),
  /** Where the provider must send its webhooks. */
  webhook_url: z.string(),
  /**
   * `active` takes new purchases; `standby` is connected but not active; `settling` was
   * disconnected or replaced and keeps its credentials read-only until its open invoices close.
   */
  state: z.enum(['active', 'standby', 'settling', 'disconnected']),
  /** Invoices still pending at this provider (what "settling N open invoices" counts). */
  open_invoices: z.number(),
  /** The id of the webhook Tandem registered at the provider, when it could. */
  webhook_id: z.string().nullable(),
})
export const ProvidersStatus = z.object({
  active: ProviderName.nullable(),
  /** Invoices whose provider record disagreed with ours (under/overpaid, currency or store), for the admin. */
  flagged_invoices: z.number(),
  btcpay: ConnectionView.extend({ store_id: z.string().nullable(), has_webhook_secret: z.boolean() }),
  zaprite: ConnectionView,
})
export type ProvidersStatus = z.infer<typeof ProvidersStatus>

export const Secret = z
  .string()
  .min(8)
  .max(256)
  .regex(/^[\x21-\x7e]+$/, 'printable characters without spaces')

/** Every event the outbox delivers (README "Outbound events" documents each payload). */
export const WebhookEventName = z.enum([
  'license.issued',
  'license.revoked',
  'license.suspended',
  'license.reinstated',
  'license.tier_changed',
  'license.topped_up',
  'machine.activated',
  'machine.deactivated',
  'code.redeemed',
  'subscription.created',
  'subscription.renewal_pending',
  'subscription.renewed',
  'subscription.renewal_failed',
  'subscription.cancelled',
  'subscription.lapsed',
])
export type WebhookEventName = z.infer<typeof WebhookEventName>

/** What an endpoint subscribes to: a known event name, or `*` for all of them. */
export const WebhookEvent = z.union([WebhookEventName, z.literal('*')], {
  error: `an event name (${WebhookEventName.options.join(', ')}) or *`,
})

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

export const WebhookEndpointSort = z.enum(['created_at', 'updated_at', 'url'])
export const WebhookEndpointQuery = z.object({
  /** Matches the URL as shown (a password in it is not searchable) or the description. */
  q: SearchText,
  sort: WebhookEndpointSort.default('created_at'),
  order: SortOrder.default('desc'),
  ...pageOf(100, 500),
})
export type WebhookEndpointQuery = z.infer<typeof WebhookEndpointQuery>

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
    output: page('items', InvoiceView, 'rows-first'),
  }),
  licAdminExportInvoices: method({
    summary: 'Invoices matching a filter as CSV',
    http: 'GET /v1/admin/export/invoices',
    input: InvoiceFilter,
    output: CsvExport,
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
      outcome: z.enum(['settled', 'flagged', 'expired', 'invalid', 'pending', 'unreachable', 'not_pending']),
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
    aliases: ['POST /v1/admin/provider_a/connect'],
    input: z.object({
      base_url: HttpUrl,
      store_id: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'letters, digits, _ and -'),
      api_key: Secret,
      webhook_secret: Secret,
    }),
    output: ProvidersStatus,
  }),
  licAdminBtcpayDisconnect: method({
    summary:
      'Disconnect BTCPay Server; with open invoices it keeps settling them read-only, else its credentials are cleared',
    http: 'POST /v1/admin/btcpay/disconnect',
    aliases: ['POST /v1/admin/provider_a/disconnect'],
    input: z.object({}),
    output: ProvidersStatus,
  }),
  licAdminBtcpayStatus: method({
    summary: 'BTCPay Server connection snapshot',
    http: 'GET /v1/admin/btcpay/status',
    aliases: ['GET /v1/admin/provider_a/status'],
    input: z.object({}),
    output: ProvidersStatus,
  }),
  licAdminBtcpayAuthorize: method({
    summary:
      "Start connecting BTCPay by authorization: the address of the server's API-key page asking for exactly the permissions Tandem needs",
    http: 'POST /v1/admin/btcpay/authorize',
    aliases: ['POST /v1/admin/provider_a/authorize'],
    input: z.object({
      base_url: HttpUrl,
      /** Omitted: the operator picks the store on BTCPay's page. */
      store_id: blankToUndefined(z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'letters, digits, _ and -')),
    }),
    output: z.object({ authorize_url: z.string(), expires_at: z.number(), permissions: z.array(z.string()) }),
  }),
  licAdminForgetProvider: method({
    summary: 'Forget a settling or standby provider now, even with open invoices (they can then only expire)',
    http: 'POST /v1/admin/providers/:provider/forget',
    input: z.object({
      provider: ProviderName,
      confirm: z.literal(true, {
        error: 'confirm: true is required; open invoices of this provider can no longer settle',
      }),
    }),
    output: ProvidersStatus,
  }),
  licAdminZapriteConnect: method({
    summary: 'Validate a Zaprite API key by listing orders, then save it and make Zaprite active (spec: provider_b)',
    http: 'POST /v1/admin/zaprite/connect',
    aliases: ['POST /v1/admin/provider_b/connect'],
    input: z.object({ api_key: Secret, base_url: HttpUrl.optional() }),
    output: ProvidersStatus,
  }),
  licAdminZapriteDisconnect: method({
    summary: 'Disconnect Zaprite; with open orders it keeps settling them read-only, else its credentials are cleared',
    http: 'POST /v1/admin/zaprite/disconnect',
    aliases: ['POST /v1/admin/provider_b/disconnect'],
    input: z.object({}),
    output: ProvidersStatus,
  }),
  licAdminZapriteStatus: method({
    summary: 'Zaprite connection snapshot (read-only)',
    http: 'GET /v1/admin/zaprite/status',
    aliases: ['GET /v1/admin/provider_b/status'],
    input: z.object({}),
    output: ProvidersStatus,
  }),
  licAdminWebhookEndpoints: method({
    summary: 'Outbound webhook endpoints, newest first (sortable, searchable, paged; secrets never returned)',
    http: 'GET /v1/admin/webhook-endpoints',
    input: WebhookEndpointQuery,
    output: page('endpoints', WebhookEndpointView),
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
