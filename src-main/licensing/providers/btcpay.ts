import { createHmac, timingSafeEqual } from 'node:crypto'
import { z } from 'zod'
import { joinUrl, providerJson } from './http'
import {
  ProviderInvoiceId,
  WebhookRejected,
  type BtcpaySettings,
  type CreateCheckoutParams,
  type CreatedCheckout,
  type PaymentProvider,
  type ProviderInvoiceSnapshot,
  type ProviderInvoiceStatus,
  type WebhookHint,
} from './types'

/** The Greenfield invoice subset we read. */
const GreenfieldInvoice = z.object({
  id: ProviderInvoiceId,
  status: z.string(),
  checkoutLink: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
})

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
    const orderId = inv.metadata?.orderId
    return {
      status: mapBtcpayStatus(inv.status),
      providerStatus: inv.status,
      localInvoiceId: typeof orderId === 'string' ? orderId : null,
    }
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
