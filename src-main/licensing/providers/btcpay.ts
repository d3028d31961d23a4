import { createHmac, timingSafeEqual } from 'node:crypto'
import { z } from 'zod'
import { ApiError } from '../../contract/errors'
import { joinUrl, providerJson } from './providerRequest'
import { parseProviderMoney } from './providerAmounts'
import {
  ProviderInvoiceId,
  WebhookRejected,
  type BtcpaySettings,
  type CreateCheckoutParams,
  type CreatedCheckout,
  type PaymentProvider,
  type ProviderInvoiceSnapshot,
  type ProviderMoney,
  type ProviderInvoiceStatus,
  type WebhookHint,
} from './types'

/** The Greenfield invoice subset we read. */
const GreenfieldInvoice = z.object({
  id: ProviderInvoiceId,
  storeId: z.string().max(128).nullish(),
  status: z.string().max(64),
  additionalStatus: z.string().max(64).nullish(),
  amount: z.union([z.string().max(40), z.number()]),
  currency: z.string().max(12),
  checkoutLink: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
})
type GreenfieldInvoice = z.infer<typeof GreenfieldInvoice>

/**
 * One entry of `/invoices/{id}/payment-methods`: `totalPaid` is the whole invoice's, in this
 * method's currency, which BTCPay 2.x names `currency` and 1.x `cryptoCode` (2.x leaves it null on
 * a prompt without one). Each payment's `status` is Invalid, Processing or Settled (confirmed).
 */
const PaymentMethod = z.object({
  currency: z.string().max(12).nullish(),
  cryptoCode: z.string().max(12).nullish(),
  totalPaid: z.union([z.string().max(40), z.number()]),
  payments: z
    .array(z.object({ status: z.string().max(32) }))
    .max(1000)
    .nullish(),
})
type PaymentMethod = z.infer<typeof PaymentMethod>

/** Invoices listed per page by the reconciliation's list call, and the most pages read per tick. */
const LIST_PAGE = 200
const LIST_MAX_PAGES = 25

/**
 * What Tandem's BTCPay key may do, and nothing more: read the store (credential check), create and
 * read invoices, and register its webhook.
 */
export const BTCPAY_PERMISSIONS = [
  'btcpay.store.canviewstoresettings',
  'btcpay.store.cancreateinvoice',
  'btcpay.store.canviewinvoices',
  'btcpay.store.webhooks.canmodifywebhooks',
] as const

/** The invoice events Tandem subscribes to when it registers its own webhook (1.x ignores names it lacks). */
const WEBHOOK_EVENTS = [
  'InvoiceSettled',
  'InvoiceProcessing',
  'InvoicePaymentSettled',
  'InvoiceExpired',
  'InvoiceInvalid',
  'InvoicePaidAfterExpiration',
]

const WebhookBody = z.object({
  type: z.string().max(64),
  invoiceId: ProviderInvoiceId,
  storeId: z.string().max(128).optional(),
  deliveryId: z.string().max(128).optional(),
})

/** Greenfield invoice states → ours. `New` and `Processing` are still waiting (confirmations). */
export function mapBtcpayStatus(status: string): ProviderInvoiceStatus {
  switch (status) {
    case 'Settled':
    case 'Complete': // legacy name some servers still report
    case 'Confirmed':
      return 'settled'
    case 'Expired':
      return 'expired'
    case 'Invalid':
      return 'invalid'
    default:
      return 'pending'
  }
}

const EVENT_CLAIMS: Record<string, WebhookHint['claimed']> = {
  InvoiceSettled: 'settled',
  InvoiceProcessing: 'processing',
  InvoicePaymentSettled: 'processing',
  InvoiceExpired: 'expired',
  InvoiceInvalid: 'invalid',
  // 2.x only; the late payment may still be unconfirmed, so this only asks for a re-check.
  InvoicePaidAfterExpiration: 'processing',
}

/** Integer sats → Greenfield's BTC decimal string, without floating point. */
export function satsToBtcString(sats: number): string {
  if (!Number.isSafeInteger(sats) || sats < 0) throw new RangeError('sats must be a non-negative integer')
  const whole = Math.floor(sats / 100_000_000)
  const frac = String(sats % 100_000_000).padStart(8, '0')
  return `${whole}.${frac}`
}

/** `sha256=<hex HMAC-SHA256 of the raw body>` compared in constant time. */
export function verifyBtcpaySignature(secret: string, rawBody: Buffer, header: string | undefined): boolean {
  if (!header || !header.startsWith('sha256=')) return false
  const given = header.slice('sha256='.length).trim().toLowerCase()
  if (!/^[0-9a-f]{64}$/.test(given)) return false
  const expected = createHmac('sha256', secret).update(rawBody).digest()
  return timingSafeEqual(expected, Buffer.from(given, 'hex'))
}

/**
 * The invoice's paid total in `currency`, from whichever payment method is in it (each carries the
 * whole invoice's total); zero when methods exist but none is in that unit, null when there are none.
 */
function totalPaid(methods: readonly PaymentMethod[], currency: string): ProviderMoney | null {
  let best: ProviderMoney | null = null
  for (const m of methods) {
    const unit = m.currency ?? m.cryptoCode
    const paid = unit ? parseProviderMoney(m.totalPaid, unit) : null
    if (paid && paid.currency === currency && (!best || paid.value > best.value)) best = paid
  }
  return best ?? (methods.length === 0 ? null : { currency, value: 0 })
}

/** BTCPay Server through its Greenfield API (spec: provider_a). */
export class BtcpayProvider implements PaymentProvider {
  readonly kind = 'btcpay' as const

  constructor(private readonly settings: BtcpaySettings) {}

  private get auth(): string {
    return `token ${this.settings.apiKey}`
  }

  private invoicesUrl(suffix = ''): string {
    return joinUrl(
      this.settings.baseUrl,
      `/api/v1/stores/${encodeURIComponent(this.settings.storeId)}/invoices${suffix}`,
    )
  }

  async createCheckout(p: CreateCheckoutParams, signal?: AbortSignal): Promise<CreatedCheckout> {
    const inv = await providerJson(
      'BTCPay',
      {
        method: 'POST',
        url: this.invoicesUrl(),
        authorization: this.auth,
        signal,
        body: {
          amount: satsToBtcString(p.amountSats),
          currency: 'BTC',
          metadata: {
            orderId: p.localInvoiceId,
            itemDesc: p.label,
            ...(p.buyerEmail ? { buyerEmail: p.buyerEmail } : {}),
          },
          checkout: { redirectURL: p.redirectUrl, redirectAutomatically: true },
        },
      },
      GreenfieldInvoice,
    )
    if (!inv.checkoutLink) throw new Error('BTCPay returned an invoice without a checkout link')
    return { providerInvoiceId: inv.id, checkoutUrl: inv.checkoutLink }
  }

  async getInvoice(providerInvoiceId: string, signal?: AbortSignal): Promise<ProviderInvoiceSnapshot> {
    const id = ProviderInvoiceId.parse(providerInvoiceId)
    const inv = await providerJson(
      'BTCPay',
      { method: 'GET', url: this.invoicesUrl(`/${encodeURIComponent(id)}`), authorization: this.auth, signal },
      GreenfieldInvoice,
    )
    const { snap, currency } = this.snapshot(inv)
    // The paid total lives on the payment methods; only worth a second call once money arrived.
    const paidSomething = snap.status === 'settled' || snap.paidVerdict !== null
    if (!paidSomething) return snap
    const methods = await this.paymentMethods(id, signal)
    const paid = totalPaid(methods, currency)
    // BTCPay marks a late payment as soon as it is seen; it counts once its payments are confirmed.
    const unconfirmed = methods.some((m) => m.payments?.some((p) => p.status === 'Processing'))
    return snap.late && unconfirmed ? { ...snap, status: 'pending', paid } : { ...snap, paid }
  }

  /**
   * Invoices created since `sinceMs` that were paid: Greenfield's list filtered by status and start
   * date, paged — the settled ones, then the expired ones BTCPay marks paid late.
   */
  async listPaid(sinceMs: number, signal?: AbortSignal): Promise<ProviderInvoiceSnapshot[]> {
    const startDate = String(Math.max(0, Math.floor(sinceMs / 1000)))
    const settled = await this.listByStatus('Settled', startDate, signal)
    const expired = await this.listByStatus('Expired', startDate, signal)
    return [...settled, ...expired.filter((s) => s.late === true)]
  }

  /** One status's invoices since `startDate` (unix seconds), at most LIST_MAX_PAGES pages. */
  private async listByStatus(status: string, startDate: string, signal?: AbortSignal) {
    const out: ProviderInvoiceSnapshot[] = []
    for (let page = 0; page < LIST_MAX_PAGES; page++) {
      const q = new URLSearchParams({
        status,
        startDate,
        skip: String(page * LIST_PAGE),
        take: String(LIST_PAGE),
      })
      const items = await providerJson(
        'BTCPay',
        { method: 'GET', url: this.invoicesUrl(`?${q.toString()}`), authorization: this.auth, signal },
        z.array(z.unknown()),
      )
      for (const item of items) {
        const inv = GreenfieldInvoice.safeParse(item)
        if (inv.success) out.push(this.snapshot(inv.data).snap)
      }
      if (items.length < LIST_PAGE) break
    }
    return out
  }

  /**
   * The invoice as we read it, and the unit its amount is in. `Expired` with `PaidLate` (paid in
   * full after expiry) counts as paid: late payments count.
   */
  private snapshot(inv: GreenfieldInvoice): { snap: ProviderInvoiceSnapshot; currency: string } {
    const orderId = inv.metadata?.orderId
    const amount = parseProviderMoney(inv.amount, inv.currency)
    if (!amount) throw new ApiError('upstream_error', 'BTCPay answered an invoice amount that is not a decimal')
    const extra = inv.additionalStatus ?? ''
    const late = inv.status === 'Expired' && extra === 'PaidLate'
    const snap: ProviderInvoiceSnapshot = {
      providerInvoiceId: inv.id,
      status: late ? 'settled' : mapBtcpayStatus(inv.status),
      providerStatus: extra && extra !== 'None' ? `${inv.status} (${extra})` : inv.status,
      localInvoiceId: typeof orderId === 'string' ? orderId : null,
      amount,
      paid: null,
      paidVerdict: extra === 'PaidOver' ? 'over' : extra === 'PaidPartial' ? 'under' : null,
      storeId: inv.storeId ?? null,
      ...(late ? { late } : {}),
    }
    return { snap, currency: amount.currency }
  }

  private paymentMethods(id: string, signal?: AbortSignal): Promise<PaymentMethod[]> {
    return providerJson(
      'BTCPay',
      {
        method: 'GET',
        url: this.invoicesUrl(`/${encodeURIComponent(id)}/payment-methods`),
        authorization: this.auth,
        signal,
      },
      z.array(PaymentMethod).max(100),
    )
  }

  parseWebhook(headers: Readonly<Record<string, string | string[] | undefined>>, rawBody: Buffer): WebhookHint {
    const sig = headers['btcpay-sig']
    if (!verifyBtcpaySignature(this.settings.webhookSecret, rawBody, typeof sig === 'string' ? sig : undefined)) {
      throw new WebhookRejected(401, 'missing or invalid BTCPay-Sig')
    }
    let json: unknown
    try {
      json = JSON.parse(rawBody.toString('utf8'))
    } catch {
      throw new WebhookRejected(400, 'body is not JSON')
    }
    const body = WebhookBody.safeParse(json)
    if (!body.success) throw new WebhookRejected(400, 'not an invoice event')
    if (body.data.storeId !== undefined && body.data.storeId !== this.settings.storeId) {
      throw new WebhookRejected(400, 'event for another store')
    }
    return {
      providerInvoiceId: body.data.invoiceId,
      claimed: EVENT_CLAIMS[body.data.type] ?? 'ignored',
      eventType: body.data.type,
    }
  }

  /** Registers Tandem's webhook at the store with `secret`; answers BTCPay's webhook id. */
  async registerWebhook(url: string, secret: string, signal?: AbortSignal): Promise<string> {
    const hook = await providerJson(
      'BTCPay',
      {
        method: 'POST',
        url: joinUrl(this.settings.baseUrl, `/api/v1/stores/${encodeURIComponent(this.settings.storeId)}/webhooks`),
        authorization: this.auth,
        signal,
        body: {
          enabled: true,
          automaticRedelivery: true,
          url,
          secret,
          authorizedEvents: { everything: false, specificEvents: WEBHOOK_EVENTS },
        },
      },
      z.object({ id: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/) }),
    )
    return hook.id
  }

  async verifyCredentials(signal?: AbortSignal): Promise<void> {
    await providerJson(
      'BTCPay',
      {
        method: 'GET',
        url: joinUrl(this.settings.baseUrl, `/api/v1/stores/${encodeURIComponent(this.settings.storeId)}`),
        authorization: this.auth,
        signal,
      },
      z.object({ id: z.string() }),
    )
  }
}
