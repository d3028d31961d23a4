import { z } from 'zod'
import { joinUrl, providerJson } from './http'
import {
  ProviderInvoiceId,
  WebhookRejected,
  type CreateCheckoutParams,
  type CreatedCheckout,
  type PaymentProvider,
  type ProviderInvoiceSnapshot,
  type ProviderInvoiceStatus,
  type WebhookHint,
  type ZapriteSettings,
} from './types'

const ZapriteOrder = z.object({
  id: ProviderInvoiceId,
  status: z.string(),
  checkoutUrl: z.string().optional(),
  externalUniqId: z.string().nullish(),
})

/** Zaprite order states → ours. Only PAID, COMPLETE and OVERPAID settle; UNDERPAID waits for a top-up. */
export function mapZapriteStatus(status: string): ProviderInvoiceStatus {
  switch (status) {
    case 'PAID':
    case 'COMPLETE':
    case 'OVERPAID':
      return 'settled'
    case 'EXPIRED':
      return 'expired'
    case 'INVALID':
    case 'CANCELLED':
      return 'invalid'
    default: // PENDING, PROCESSING, UNDERPAID and anything new: keep waiting
      return 'pending'
  }
}

const ORDER_EVENTS: Record<string, WebhookHint['claimed']> = {
  'order.paid': 'settled',
  'order.complete': 'settled',
  'order.overpaid': 'settled',
  'order.expired': 'expired',
  'order.cancelled': 'invalid',
  'order.invalid': 'invalid',
}

function pick(obj: unknown, ...path: string[]): unknown {
  let cur = obj
  for (const k of path) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return undefined
    cur = (cur as Record<string, unknown>)[k]
  }
  return cur
}

/**
 * Zaprite (spec: provider_b). Its webhooks carry no signature, so `parseWebhook` only extracts
 * an order id: the settlement handler trusts nothing until the order resolves to a local invoice
 * and the order re-fetched from Zaprite says it is paid.
 */
export class ZapriteProvider implements PaymentProvider {
  readonly kind = 'zaprite' as const

  constructor(private readonly settings: ZapriteSettings) {}

  private get auth(): string {
    return `Bearer ${this.settings.apiKey}`
  }

  async createCheckout(p: CreateCheckoutParams, signal?: AbortSignal): Promise<CreatedCheckout> {
    // Fiat-listed items are charged in their own currency (cents) so card buyers pay the listed
    // price; SAT and BTC items are charged in sats, which Zaprite spells BTC.
    const fiat = p.listed.currency === 'USD' || p.listed.currency === 'EUR'
    const order = await providerJson(
      'Zaprite',
      {
        method: 'POST',
        url: joinUrl(this.settings.baseUrl, '/v1/orders'),
        authorization: this.auth,
        signal,
        body: {
          amount: fiat ? p.listed.value : p.amountSats,
          currency: fiat ? p.listed.currency : 'BTC',
          externalUniqId: p.localInvoiceId,
          redirectUrl: p.redirectUrl,
          label: p.label,
          ...(p.buyerEmail ? { customerData: { email: p.buyerEmail } } : {}),
        },
      },
      ZapriteOrder,
    )
    if (!order.checkoutUrl) throw new Error('Zaprite returned an order without a checkout URL')
    return { providerInvoiceId: order.id, checkoutUrl: order.checkoutUrl }
  }

  async getInvoice(providerInvoiceId: string, signal?: AbortSignal): Promise<ProviderInvoiceSnapshot> {
    const id = ProviderInvoiceId.parse(providerInvoiceId)
    const order = await providerJson(
      'Zaprite',
      {
        method: 'GET',
        url: joinUrl(this.settings.baseUrl, `/v1/orders/${encodeURIComponent(id)}`),
        authorization: this.auth,
        signal,
      },
      ZapriteOrder,
    )
    return {
      status: mapZapriteStatus(order.status),
      providerStatus: order.status,
      localInvoiceId: order.externalUniqId ?? null,
    }
  }

  parseWebhook(_headers: Readonly<Record<string, string | string[] | undefined>>, rawBody: Buffer): WebhookHint {
    let json: unknown
    try {
      json = JSON.parse(rawBody.toString('utf8'))
    } catch {
      throw new WebhookRejected(400, 'body is not JSON')
    }
    if (json === null || typeof json !== 'object' || Array.isArray(json))
      throw new WebhookRejected(400, 'body is not a JSON object')
    const rawId =
      pick(json, 'data', 'id') ?? pick(json, 'data', 'object', 'id') ?? pick(json, 'orderId') ?? pick(json, 'id')
    const id = ProviderInvoiceId.safeParse(rawId)
    if (!id.success) throw new WebhookRejected(400, 'webhook without an order id')
    const eventType = [pick(json, 'event'), pick(json, 'eventType'), pick(json, 'type')].find(
      (v): v is string => typeof v === 'string' && v.length > 0 && v.length <= 64,
    )
    const status = pick(json, 'data', 'status')
    const claimed: WebhookHint['claimed'] =
      (eventType ? ORDER_EVENTS[eventType] : undefined) ??
      (typeof status === 'string' ? mapZapriteStatus(status) : 'ignored')
    return { providerInvoiceId: id.data, claimed, eventType: eventType ?? 'order.change' }
  }

  /** Lists one order: an authenticated read that proves the key belongs to an organisation. */
  async verifyCredentials(signal?: AbortSignal): Promise<void> {
    await providerJson(
      'Zaprite',
      { method: 'GET', url: joinUrl(this.settings.baseUrl, '/v1/orders?limit=1'), authorization: this.auth, signal },
      z.unknown(),
    )
  }
}
