import { z } from 'zod'
import { ApiError } from '../../contract/errors'
import { joinUrl, providerJson } from './providerRequest'
import { parseProviderMoney } from './providerAmounts'
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

/**
 * The order as Zaprite's reference promises it: an id and a status. Amount, currency and what was
 * paid are read when present (Zaprite's own clients read them) and judged on the status alone when
 * not (test/fixtures/licensing/zaprite/orders.json).
 */
const ZapriteOrder = z.object({
  id: ProviderInvoiceId,
  status: z.string().max(64),
  amount: z.union([z.number(), z.string().max(40)]).nullish(),
  currency: z.string().max(12).nullish(),
  checkoutUrl: z.string().optional(),
  externalUniqId: z.string().nullish(),
  createdAt: z.string().max(64).nullish(),
  /** What the buyer paid, in the order's smallest unit, when Zaprite reports it. */
  paidAmount: z.union([z.number(), z.string().max(40)]).nullish(),
})
type ZapriteOrder = z.infer<typeof ZapriteOrder>

/** A page of the order list: its orders; a `meta.pagesCount`, when there, ends paging early. */
const OrderPage = z.object({
  items: z.array(z.unknown()).max(1000),
  meta: z
    .object({ pagesCount: z.number().int().nonnegative().nullish().catch(null) })
    .nullish()
    .catch(null),
})

const LIST_PAGE = 100
const LIST_MAX_PAGES = 25
/** Order states that carry money (so reconciliation settles or flags them). */
const PAID_STATES = new Set(['PAID', 'COMPLETE', 'OVERPAID', 'UNDERPAID'])
/** The order events Tandem's registered webhook asks for. */
const WEBHOOK_EVENTS = [
  'order.change',
  'order.paid',
  'order.complete',
  'order.overpaid',
  'order.underpaid',
  'order.expired',
]

/** Zaprite amounts are integers in the smallest unit already (cents, sats). */
function orderMoney(value: number | string, currency: string) {
  const money = parseProviderMoney(value, 'SATS')
  return money
    ? { currency: currency.toUpperCase() === 'SATS' ? 'BTC' : currency.toUpperCase(), value: money.value }
    : null
}

/** An order amount with its currency; null when either is absent, an error when it is not an integer. */
function reportedMoney(value: number | string | null | undefined, currency: string | null | undefined) {
  if (value === null || value === undefined || !currency) return null
  const money = orderMoney(value, currency)
  if (!money) throw new ApiError('upstream_error', 'Zaprite answered an order amount that is not an integer')
  return money
}

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

function snapshotOf(order: ZapriteOrder): ProviderInvoiceSnapshot {
  return {
    providerInvoiceId: order.id,
    status: mapZapriteStatus(order.status),
    providerStatus: order.status,
    localInvoiceId: order.externalUniqId ?? null,
    amount: reportedMoney(order.amount, order.currency),
    paid: reportedMoney(order.paidAmount, order.currency),
    paidVerdict: order.status === 'OVERPAID' ? 'over' : order.status === 'UNDERPAID' ? 'under' : null,
    storeId: null,
  }
}

/**
 * Adds a list page's paid orders created since `sinceMs` to `out`, skipping orders already `seen`;
 * answers whether the page reached older orders and how many orders were new.
 */
function collectPaid(
  items: readonly unknown[],
  sinceMs: number,
  seen: Set<string>,
  out: ProviderInvoiceSnapshot[],
): { older: boolean; fresh: number } {
  let older = false
  let fresh = 0
  for (const item of items) {
    const order = ZapriteOrder.safeParse(item)
    if (!order.success || seen.has(order.data.id)) continue
    seen.add(order.data.id)
    fresh++
    const created = order.data.createdAt ? Date.parse(order.data.createdAt) : NaN
    if (Number.isFinite(created) && created < sinceMs) older = true
    else if (PAID_STATES.has(order.data.status)) out.push(snapshotOf(order.data))
  }
  return { older, fresh }
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
    return snapshotOf(order)
  }

  /**
   * Paid orders created since `sinceMs`, from the order list (newest first), paged until older
   * ones. Paging stops at a short page, at `meta.pagesCount` when the answer has one, at a page
   * that brings no order not seen before (a list that ignores `page`), and after LIST_MAX_PAGES.
   */
  async listPaid(sinceMs: number, signal?: AbortSignal): Promise<ProviderInvoiceSnapshot[]> {
    const out: ProviderInvoiceSnapshot[] = []
    const seen = new Set<string>()
    for (let page = 1; page <= LIST_MAX_PAGES; page++) {
      const res = await this.orderPage(page, signal)
      const { older, fresh } = collectPaid(res.items, sinceMs, seen, out)
      const last = res.meta?.pagesCount ?? null
      if (older || fresh === 0 || res.items.length < LIST_PAGE || (last !== null && page >= last)) break
    }
    return out
  }

  private orderPage(page: number, signal?: AbortSignal) {
    const q = new URLSearchParams({ page: String(page), limit: String(LIST_PAGE) })
    return providerJson(
      'Zaprite',
      {
        method: 'GET',
        url: joinUrl(this.settings.baseUrl, `/v1/orders?${q.toString()}`),
        authorization: this.auth,
        signal,
      },
      OrderPage,
    )
  }

  /**
   * Registers Tandem's webhook for order events; null when this Zaprite API offers no webhook
   * registration (the operator then adds the URL in Zaprite's settings).
   */
  async registerWebhook(url: string, signal?: AbortSignal): Promise<string | null> {
    try {
      const hook = await providerJson(
        'Zaprite',
        {
          method: 'POST',
          url: joinUrl(this.settings.baseUrl, '/v1/webhooks'),
          authorization: this.auth,
          signal,
          body: { url, events: WEBHOOK_EVENTS },
        },
        z.object({ id: z.string().regex(/^[A-Za-z0-9_.:-]{1,128}$/) }),
      )
      return hook.id
    } catch (err) {
      if (err instanceof ApiError && err.code === 'upstream_not_found') return null
      throw err
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
