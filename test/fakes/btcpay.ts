import { createHmac, randomBytes } from 'node:crypto'
import { checkoutPage } from './btcpayCheckout'
import { LoopbackFake, postRaw, type FakeReply, type RecordedRequest } from './loopback'

export type FakeBtcpayStatus = 'New' | 'Processing' | 'Settled' | 'Expired' | 'Invalid'

export interface FakeBtcpayInvoice {
  id: string
  storeId: string
  amount: string
  currency: string
  status: FakeBtcpayStatus
  metadata: Record<string, unknown>
  redirectURL: string | null
  checkoutLink: string
}

/**
 * A loopback BTCPay Server speaking the Greenfield subset Tandem uses: create and fetch store
 * invoices and read the store, with `Authorization: token <key>`. It records every request and
 * can deliver signed (or forged) webhooks.
 */
export class FakeBtcpay extends LoopbackFake {
  readonly apiKey: string
  readonly storeId: string
  readonly webhookSecret: string
  readonly invoices = new Map<string, FakeBtcpayInvoice>()
  /** Where `pay()` delivers its webhooks; set it to Tandem's /v1/btcpay/webhook. */
  webhookUrl: string | null = null
  private seq = 0

  constructor(opts: { apiKey?: string; storeId?: string; webhookSecret?: string } = {}) {
    super()
    this.apiKey = opts.apiKey ?? `btcpay-key-${randomBytes(8).toString('hex')}`
    this.storeId = opts.storeId ?? 'StoreFake1'
    this.webhookSecret = opts.webhookSecret ?? `whsec-${randomBytes(8).toString('hex')}`
  }

  setStatus(id: string, status: FakeBtcpayStatus): void {
    const inv = this.invoices.get(id)
    if (!inv) throw new Error(`no fake invoice ${id}`)
    inv.status = status
  }

  /** The buyer pays: the invoice settles and a signed InvoiceSettled goes to `webhookUrl`. */
  async pay(id: string): Promise<{ status: number; text: string }> {
    this.setStatus(id, 'Settled')
    return this.sendEvent('InvoiceSettled', id)
  }

  /** Delivers an event for `invoiceId`; `signature` overrides the header (null = no header). */
  async sendEvent(
    type: string,
    invoiceId: string,
    opts: { signature?: string | null; url?: string; extra?: Record<string, unknown> } = {},
  ): Promise<{ status: number; text: string }> {
    const body = JSON.stringify({
      deliveryId: `dlv_${++this.seq}`,
      webhookId: 'wh_fake',
      originalDeliveryId: `dlv_${this.seq}`,
      isRedelivery: false,
      type,
      timestamp: Math.floor(Date.now() / 1000),
      storeId: this.storeId,
      invoiceId,
      ...opts.extra,
    })
    return this.deliverRaw(body, opts)
  }

  /** Posts an arbitrary raw body, signed with the real secret unless told otherwise. */
  async deliverRaw(
    body: string,
    opts: { signature?: string | null; url?: string } = {},
  ): Promise<{ status: number; text: string }> {
    const url = opts.url ?? this.webhookUrl
    if (!url) throw new Error('FakeBtcpay.webhookUrl is not set')
    const sig = opts.signature === undefined ? this.sign(body) : opts.signature
    return postRaw(url, body, sig === null ? {} : { 'BTCPay-Sig': sig })
  }

  sign(body: string): string {
    return `sha256=${createHmac('sha256', this.webhookSecret).update(body).digest('hex')}`
  }

  protected handle(req: RecordedRequest, url: URL): FakeReply | Promise<FakeReply> {
    if (url.pathname.startsWith('/i/')) return checkoutPage(this, req, url)
    if (req.headers.authorization !== `token ${this.apiKey}`) return { status: 401, body: { code: 'unauthenticated' } }
    const m = url.pathname.match(/^\/api\/v1\/stores\/([^/]+)(\/invoices(?:\/([^/]+))?)?$/)
    if (!m || decodeURIComponent(m[1]!) !== this.storeId) return { status: 404, body: { code: 'store-not-found' } }
    if (!m[2] && req.method === 'GET') return { status: 200, body: { id: this.storeId, name: 'Fake store' } }
    if (m[2] && !m[3] && req.method === 'POST') {
      const input = JSON.parse(req.body) as {
        amount: string
        currency: string
        metadata?: Record<string, unknown>
        checkout?: { redirectURL?: string }
      }
      const id = `FakeInv${++this.seq}${randomBytes(3).toString('hex')}`
      const inv: FakeBtcpayInvoice = {
        id,
        storeId: this.storeId,
        amount: input.amount,
        currency: input.currency,
        status: 'New',
        metadata: input.metadata ?? {},
        redirectURL: input.checkout?.redirectURL ?? null,
        checkoutLink: `${this.url}/i/${id}`,
      }
      this.invoices.set(id, inv)
      return { status: 200, body: inv }
    }
    if (m[3] && req.method === 'GET') {
      const inv = this.invoices.get(decodeURIComponent(m[3]))
      return inv ? { status: 200, body: inv } : { status: 404, body: { code: 'invoice-not-found' } }
    }
    return { status: 404, body: { code: 'not-found' } }
  }
}
