import { randomBytes } from 'node:crypto'
import { LoopbackFake, postRaw, type FakeReply, type RecordedRequest } from './loopback'

export type FakeZapriteStatus = 'PENDING' | 'PROCESSING' | 'PAID' | 'COMPLETE' | 'OVERPAID' | 'UNDERPAID' | 'EXPIRED'

export interface FakeZapriteOrder {
  id: string
  status: FakeZapriteStatus
  amount: number
  currency: string
  externalUniqId: string | null
  redirectUrl: string | null
  label: string | null
  checkoutUrl: string
  customerData: Record<string, unknown> | null
  /** ISO time the order was created. */
  createdAt: string
  /** What the buyer paid, in the order's smallest unit; null until something is paid. */
  paidAmount: number | null
}

export interface FakeZapriteWebhook {
  id: string
  url: string
  events: string[]
}

/**
 * A loopback Zaprite: create, fetch and list orders with `Authorization: Bearer <key>`. Like the
 * real one it signs nothing; `sendWebhook` posts whatever body a test wants.
 */
export class FakeZaprite extends LoopbackFake {
  readonly apiKey: string
  readonly orders = new Map<string, FakeZapriteOrder>()
  webhookUrl: string | null = null
  readonly webhooks = new Map<string, FakeZapriteWebhook>()
  /** False: `POST /v1/webhooks` answers 404, like an API that does not offer registration. */
  webhookApi = true
  /** Time source for `createdAt` (tests pass their injected clock). */
  now: () => number = () => Date.now()
  /**
   * The list answer's `meta`: with `pagesCount`, left out, or null (the pagination envelope
   * Zaprite's reference does not spell out; test/fixtures/licensing/zaprite/orders.json).
   */
  listMeta: 'full' | 'absent' | 'null' = 'full'
  /** True: the list answers its first page whatever `page` asks for. */
  ignoresPage = false
  private seq = 0

  constructor(opts: { apiKey?: string } = {}) {
    super()
    this.apiKey = opts.apiKey ?? `zap-key-${randomBytes(8).toString('hex')}`
  }

  /** Sets the state; paid states also record the full amount paid unless `setPaid` said otherwise. */
  setStatus(id: string, status: FakeZapriteStatus): void {
    const o = this.orders.get(id)
    if (!o) throw new Error(`no fake order ${id}`)
    o.status = status
    if ((status === 'PAID' || status === 'COMPLETE') && o.paidAmount === null) o.paidAmount = o.amount
  }

  /** What the buyer paid, in the order's smallest unit. */
  setPaid(id: string, paidAmount: number): void {
    const o = this.orders.get(id)
    if (!o) throw new Error(`no fake order ${id}`)
    o.paidAmount = paidAmount
  }

  /** The buyer pays: the order turns PAID and an `order.change` event goes to `webhookUrl`. */
  async pay(id: string, status: FakeZapriteStatus = 'PAID'): Promise<{ status: number; text: string }> {
    this.setStatus(id, status)
    const o = this.orders.get(id)!
    return this.sendWebhook({ event: 'order.change', data: { id, status, externalUniqId: o.externalUniqId } })
  }

  sendWebhook(body: unknown, url?: string): Promise<{ status: number; text: string }> {
    return this.sendRaw(JSON.stringify(body), url)
  }

  sendRaw(body: string, url?: string): Promise<{ status: number; text: string }> {
    const target = url ?? this.webhookUrl
    if (!target) throw new Error('FakeZaprite.webhookUrl is not set')
    return postRaw(target, body)
  }

  protected handle(req: RecordedRequest, url: URL): FakeReply {
    const checkout = url.pathname.match(/^\/checkout\/([A-Za-z0-9_]+)$/)
    if (checkout && req.method === 'GET') {
      const o = this.orders.get(checkout[1]!)
      return o
        ? { status: 200, body: `<html><body>Pay ${o.amount} ${o.currency}</body></html>` }
        : { status: 404, body: '' }
    }
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) return { status: 401, body: { message: 'Unauthorized' } }
    if (url.pathname === '/v1/orders' && req.method === 'GET') {
      // Newest first, paged with `page` (from 1) and `limit`.
      const limit = Number(url.searchParams.get('limit') ?? '20')
      const page = this.ignoresPage ? 1 : Number(url.searchParams.get('page') ?? '1')
      const all = [...this.orders.values()].reverse()
      const items = all.slice((page - 1) * limit, page * limit)
      const pagesCount = Math.max(1, Math.ceil(all.length / limit))
      if (this.listMeta === 'absent') return { status: 200, body: { items } }
      const meta = this.listMeta === 'null' ? null : { pagesCount, itemsCount: all.length }
      return { status: 200, body: { items, meta } }
    }
    if (url.pathname === '/v1/webhooks' && req.method === 'POST') {
      if (!this.webhookApi) return { status: 404, body: { message: 'Not found' } }
      const input = JSON.parse(req.body) as { url?: string; events?: string[] }
      if (!input.url) return { status: 400, body: { code: 'BAD_REQUEST', message: 'url is required' } }
      const hook = { id: `wh_${++this.seq}`, url: input.url, events: input.events ?? [] }
      this.webhooks.set(hook.id, hook)
      this.webhookUrl ??= hook.url
      return { status: 200, body: hook }
    }
    if (url.pathname === '/v1/orders' && req.method === 'POST') {
      const input = JSON.parse(req.body) as Partial<FakeZapriteOrder>
      if (typeof input.amount !== 'number' || !Number.isInteger(input.amount) || input.amount <= 0) {
        return { status: 400, body: { message: 'amount must be a positive integer in the smallest unit' } }
      }
      const id = `od_${++this.seq}${randomBytes(3).toString('hex')}`
      const order: FakeZapriteOrder = {
        id,
        status: 'PENDING',
        amount: input.amount,
        currency: String(input.currency),
        externalUniqId: input.externalUniqId ?? null,
        redirectUrl: input.redirectUrl ?? null,
        label: input.label ?? null,
        checkoutUrl: `${this.url}/checkout/${id}`,
        customerData: (input.customerData as Record<string, unknown> | undefined) ?? null,
        createdAt: new Date(this.now()).toISOString(),
        paidAmount: null,
      }
      this.orders.set(id, order)
      return { status: 200, body: order }
    }
    const one = url.pathname.match(/^\/v1\/orders\/([^/]+)$/)
    if (one && req.method === 'GET') {
      const key = decodeURIComponent(one[1]!)
      const o = this.orders.get(key) ?? [...this.orders.values()].find((x) => x.externalUniqId === key)
      return o ? { status: 200, body: o } : { status: 404, body: { message: 'Order not found' } }
    }
    return { status: 404, body: { message: 'Not found' } }
  }
}
