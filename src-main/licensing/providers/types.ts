import { z } from 'zod'

/** The two payment providers: BTCPay Server (spec: provider_a) and Zaprite (spec: provider_b). */
export const ProviderKind = z.enum(['btcpay', 'zaprite'])
export type ProviderKind = z.infer<typeof ProviderKind>

/** Local view of an invoice's state at the provider; mirrors the poll endpoint's statuses. */
export type ProviderInvoiceStatus = 'pending' | 'settled' | 'expired' | 'invalid'

/** A price the buyer sees, in the smallest unit of its currency. */
export interface ListedPrice {
  readonly currency: 'SAT' | 'BTC' | 'USD' | 'EUR'
  readonly value: number
}

export interface CreateCheckoutParams {
  /** Our invoice id: BTCPay metadata.orderId, Zaprite externalUniqId. */
  readonly localInvoiceId: string
  readonly amountSats: number
  /** What the buyer was quoted; fiat providers may charge it directly. */
  readonly listed: ListedPrice
  /** Where the provider sends the buyer after paying (the thank-you page). */
  readonly redirectUrl: string
  readonly label: string
  readonly buyerEmail: string | null
}

export interface CreatedCheckout {
  readonly providerInvoiceId: string
  readonly checkoutUrl: string
}

/** An amount in the smallest unit of `currency` (`BTC` amounts are in sats). */
export interface ProviderMoney {
  readonly currency: string
  readonly value: number
}

export interface ProviderInvoiceSnapshot {
  /** The provider's id for this invoice/order. */
  readonly providerInvoiceId: string
  readonly status: ProviderInvoiceStatus
  /** The provider's own word for the state (e.g. `Settled`, `OVERPAID`), for the admin. */
  readonly providerStatus: string
  /** Our invoice id as the provider echoes it back, when it does. */
  readonly localInvoiceId: string | null
  /** What the provider's record charges; null when it does not say (judged on its status alone). */
  readonly amount: ProviderMoney | null
  /** What the buyer has paid, when the provider says (null: not reported). */
  readonly paid: ProviderMoney | null
  /** The provider's own verdict on the payment's size, when its status carries one. */
  readonly paidVerdict: 'over' | 'under' | null
  /** The provider says the payment arrived after the invoice expired (BTCPay's `PaidLate`). */
  readonly late?: boolean
  /** The store (BTCPay) the record belongs to; null where the provider has no such notion. */
  readonly storeId: string | null
}

/** What an inbound webhook asks us to look at. Webhooks are hints: the handler re-checks state. */
export interface WebhookHint {
  readonly providerInvoiceId: string
  /** The event's own claim; BTCPay's is signed, Zaprite's is only a hint. */
  readonly claimed: ProviderInvoiceStatus | 'processing' | 'ignored'
  readonly eventType: string
}

/** A webhook that must not be acted on; `status` is the HTTP answer. */
export class WebhookRejected extends Error {
  constructor(
    readonly status: 400 | 401 | 404 | 409 | 413,
    message: string,
  ) {
    super(message)
    this.name = 'WebhookRejected'
  }
}

/**
 * One payment provider. Exactly one is active at a time; the rest of licensing only talks to
 * this interface, so switching providers never touches invoices already issued or keys.
 */
export interface PaymentProvider {
  readonly kind: ProviderKind
  createCheckout(params: CreateCheckoutParams, signal?: AbortSignal): Promise<CreatedCheckout>
  getInvoice(providerInvoiceId: string, signal?: AbortSignal): Promise<ProviderInvoiceSnapshot>
  /** Verifies (where the provider signs) and parses a delivery; throws WebhookRejected. */
  parseWebhook(headers: Readonly<Record<string, string | string[] | undefined>>, rawBody: Buffer): WebhookHint
  /** Checks the credentials with a cheap authenticated read; throws ApiError when refused. */
  verifyCredentials(signal?: AbortSignal): Promise<void>
  /**
   * Invoices/orders created since `sinceMs` that the provider counts as paid (settled, or
   * underpaid so they can be flagged), in as few list calls as its API allows.
   */
  listPaid(sinceMs: number, signal?: AbortSignal): Promise<ProviderInvoiceSnapshot[]>
}

/** Connection settings as stored (secrets included: never returned to the renderer). */
export const BtcpaySettings = z.object({
  baseUrl: z.url({ protocol: /^https?$/ }).max(512),
  storeId: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'store id: letters, digits, _ and -'),
  apiKey: z.string().regex(/^[\x21-\x7e]{8,256}$/, 'API key: 8-256 printable characters'),
  webhookSecret: z.string().regex(/^[\x21-\x7e]{8,256}$/, 'webhook secret: 8-256 printable characters'),
})
export type BtcpaySettings = z.infer<typeof BtcpaySettings>

export const ZAPRITE_DEFAULT_BASE_URL = 'https://api.zaprite.com'

export const ZapriteSettings = z.object({
  baseUrl: z.url({ protocol: /^https?$/ }).max(512),
  apiKey: z.string().regex(/^[\x21-\x7e]{8,256}$/, 'API key: 8-256 printable characters'),
})
export type ZapriteSettings = z.infer<typeof ZapriteSettings>

/** Provider ids we accept in URLs and webhook bodies before any lookup. */
export const ProviderInvoiceId = z.string().regex(/^[A-Za-z0-9_.:-]{1,128}$/)
