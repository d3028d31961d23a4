import { createHmac, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { checkoutPage } from './btcpayCheckout'
import { LoopbackFake, postRaw, type FakeReply, type RecordedRequest } from './loopback'

export type FakeBtcpayStatus = 'New' | 'Processing' | 'Settled' | 'Expired' | 'Invalid'

/** The Greenfield generations whose payment-methods answer differs (1.x `cryptoCode`, 2.x `currency`). */
export type GreenfieldVersion = '1.x' | '2.x'

/** A payment-methods answer recorded from BTCPay Server's source (test/fixtures/licensing/btcpay/). */
interface PaymentMethodsFixture {
  answer: Record<string, unknown>[]
}

const fixtures = new Map<GreenfieldVersion, PaymentMethodsFixture>()

/** The recorded answer of one Greenfield generation, read once from the repository's fixtures. */
export function paymentMethodsFixture(version: GreenfieldVersion): PaymentMethodsFixture {
  let f = fixtures.get(version)
  if (!f) {
    const file = path.join(__dirname, `../fixtures/licensing/btcpay/greenfield-${version}-payment-methods.json`)
    f = JSON.parse(fs.readFileSync(file, 'utf8')) as PaymentMethodsFixture
    fixtures.set(version, f)
  }
  return f
}

export interface FakeBtcpayInvoice {
  id: string
  storeId: string
  amount: string
  currency: string
  status: FakeBtcpayStatus
  /** Greenfield's additionalStatus: `None`, `PaidLate`, `PaidPartial`, `PaidOver`, `Marked`, `Invalid`. */
  additionalStatus?: string
  metadata: Record<string, unknown>
  redirectURL: string | null
  checkoutLink: string
  /** Unix seconds, as Greenfield reports it. */
  createdTime: number
  /** What the buyer has paid so far, a BTC decimal string (the payment-methods `totalPaid`). */
  totalPaid: string
  /** The state of the payment that brought `totalPaid` (confirmations): Processing or Settled. */
  paymentStatus?: 'Processing' | 'Settled'
}

/** A webhook registered through the Greenfield store webhooks API. */
export interface FakeBtcpayWebhook {
  id: string
  url: string
  secret: string
  enabled: boolean
}

/** The Greenfield permissions an authorization request asked for, and the key the consent created. */
export interface FakeBtcpayGrant {
  apiKey: string
  permissions: string[]
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
  /** Webhooks registered over the API, by id. */
  readonly webhooks = new Map<string, FakeBtcpayWebhook>()
  /** Keys created by the authorization flow; each works like `apiKey`. */
  readonly grants: FakeBtcpayGrant[] = []
  /** Time source for `createdTime` (tests pass their injected clock). */
  now: () => number = () => Date.now()
  /** Which recorded payment-methods answer this server replays. */
  greenfield: GreenfieldVersion
  private seq = 0

  constructor(
    opts: { apiKey?: string; storeId?: string; webhookSecret?: string; greenfield?: GreenfieldVersion } = {},
  ) {
    super()
    this.greenfield = opts.greenfield ?? '2.x'
    this.apiKey = opts.apiKey ?? `btcpay-key-${randomBytes(8).toString('hex')}`
    this.storeId = opts.storeId ?? 'StoreFake1'
    this.webhookSecret = opts.webhookSecret ?? `whsec-${randomBytes(8).toString('hex')}`
  }

  /** Sets the state; `Settled` also marks the full amount paid unless `setPaid` said otherwise. */
  setStatus(id: string, status: FakeBtcpayStatus): void {
    const inv = this.invoice(id)
    inv.status = status
    if (status === 'Settled' && Number(inv.totalPaid) === 0) inv.totalPaid = inv.amount
  }

  /** What the buyer paid (BTC decimal string), e.g. less than the amount for an underpayment. */
  setPaid(id: string, totalPaid: string): void {
    this.invoice(id).totalPaid = totalPaid
  }

  private invoice(id: string): FakeBtcpayInvoice {
    const inv = this.invoices.get(id)
    if (!inv) throw new Error(`no fake invoice ${id}`)
    return inv
  }

  /**
   * The operator consents on the authorization page: a key with the requested permissions is
   * created and the browser is sent to `redirect` with `apiKey`, `permissions` and `userId`
   * (form-posted, as BTCPay does). Answers what Tandem's callback answered.
   */
  async consent(
    authorizeUrl: string,
    opts: { via?: string } = {},
  ): Promise<{ status: number; location: string | null; grant: FakeBtcpayGrant }> {
    const u = new URL(authorizeUrl)
    const permissions = u.searchParams.getAll('permissions')
    const target = u.searchParams.get('redirect')
    if (!target) throw new Error('authorization request without a redirect')
    // `via`: the origin that actually serves PUBLIC_URL (as a reverse proxy would).
    const redirect = opts.via ? `${opts.via}${new URL(target).pathname}${new URL(target).search}` : target
    const grant = { apiKey: `granted-${randomBytes(12).toString('hex')}`, permissions }
    this.grants.push(grant)
    const form = new URLSearchParams({ apiKey: grant.apiKey, userId: 'user-fake-1' })
    // With selectiveStores the operator picks the store; the granted permissions name it.
    const selective = u.searchParams.get('selectiveStores') === 'true'
    for (const p of permissions) form.append('permissions', selective && !p.includes(':') ? `${p}:${this.storeId}` : p)
    const res = await fetch(redirect, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
      redirect: 'manual',
    })
    await res.text()
    return { status: res.status, location: res.headers.get('location'), grant }
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
    const url = opts.url ?? this.webhookUrl ?? [...this.webhooks.values()].at(-1)?.url
    if (!url) throw new Error('FakeBtcpay.webhookUrl is not set')
    const sig = opts.signature === undefined ? this.sign(body) : opts.signature
    return postRaw(url, body, sig === null ? {} : { 'BTCPay-Sig': sig })
  }

  /** Signs with the secret of the webhook registered over the API, else the preset one. */
  sign(body: string): string {
    const secret = [...this.webhooks.values()].at(-1)?.secret ?? this.webhookSecret
    return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`
  }

  protected handle(req: RecordedRequest, url: URL): FakeReply | Promise<FakeReply> {
    if (url.pathname.startsWith('/i/')) return checkoutPage(this, req, url)
    if (url.pathname === '/api-keys/authorize' && req.method === 'GET') {
      return { status: 200, body: '<html><body>Authorize application</body></html>' }
    }
    if (!this.authorized(req.headers.authorization)) return { status: 401, body: { code: 'unauthenticated' } }
    const hooks = url.pathname.match(/^\/api\/v1\/stores\/([^/]+)\/webhooks$/)
    if (hooks && req.method === 'POST' && decodeURIComponent(hooks[1]!) === this.storeId) return this.addWebhook(req)
    const pm = url.pathname.match(/^\/api\/v1\/stores\/([^/]+)\/invoices\/([^/]+)\/payment-methods$/)
    if (pm && req.method === 'GET' && decodeURIComponent(pm[1]!) === this.storeId) {
      const inv = this.invoices.get(decodeURIComponent(pm[2]!))
      if (!inv) return { status: 404, body: { code: 'invoice-not-found' } }
      return { status: 200, body: this.paymentMethods(inv) }
    }
    const m = url.pathname.match(/^\/api\/v1\/stores\/([^/]+)(\/invoices(?:\/([^/]+))?)?$/)
    if (!m || decodeURIComponent(m[1]!) !== this.storeId) return { status: 404, body: { code: 'store-not-found' } }
    if (!m[2] && req.method === 'GET') return { status: 200, body: { id: this.storeId, name: 'Fake store' } }
    if (m[2] && !m[3] && req.method === 'GET') return { status: 200, body: this.listInvoices(url.searchParams) }
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
        additionalStatus: 'None',
        metadata: input.metadata ?? {},
        redirectURL: input.checkout?.redirectURL ?? null,
        checkoutLink: `${this.url}/i/${id}`,
        createdTime: Math.floor(this.now() / 1000),
        totalPaid: '0.00000000',
        paymentStatus: 'Settled',
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

  /**
   * The recorded answer of this server's Greenfield generation, with the invoice's own figures in
   * the fields that carry them; every key and its JSON type stay as recorded.
   */
  private paymentMethods(inv: FakeBtcpayInvoice): Record<string, unknown>[] {
    const paid = Number(inv.totalPaid) > 0
    const due = (Number(inv.amount) - Number(inv.totalPaid)).toFixed(8)
    return paymentMethodsFixture(this.greenfield).answer.map((method, i) => {
      const [template] = (method.payments as Record<string, unknown>[] | undefined) ?? []
      const payment = { ...template, value: inv.totalPaid, status: inv.paymentStatus ?? 'Settled' }
      return {
        ...method,
        amount: inv.amount,
        totalPaid: inv.totalPaid,
        due,
        // The first method (on chain) is the one the buyer paid with.
        paymentMethodPaid: i === 0 ? inv.totalPaid : '0.00000000',
        payments: i === 0 && paid && template ? [payment] : [],
      }
    })
  }

  private authorized(header: string | undefined): boolean {
    return header === `token ${this.apiKey}` || this.grants.some((g) => header === `token ${g.apiKey}`)
  }

  /** Greenfield's store invoice list: `status` (repeatable), `startDate`/`endDate` (unix s), `skip`, `take`. */
  private listInvoices(q: URLSearchParams): FakeBtcpayInvoice[] {
    const statuses = q.getAll('status')
    const start = q.has('startDate') ? Number(q.get('startDate')) : -Infinity
    const end = q.has('endDate') ? Number(q.get('endDate')) : Infinity
    const skip = Number(q.get('skip') ?? '0')
    const take = Number(q.get('take') ?? '1000000')
    return [...this.invoices.values()]
      .filter(
        (i) => (statuses.length === 0 || statuses.includes(i.status)) && i.createdTime >= start && i.createdTime <= end,
      )
      .sort((a, b) => b.createdTime - a.createdTime)
      .slice(skip, skip + take)
  }

  private addWebhook(req: RecordedRequest): FakeReply {
    const input = JSON.parse(req.body) as { url?: string; secret?: string; enabled?: boolean }
    if (!input.url || !input.secret) return { status: 422, body: [{ path: 'url', message: 'url and secret required' }] }
    const hook = { id: `wh_${++this.seq}`, url: input.url, secret: input.secret, enabled: input.enabled ?? true }
    this.webhooks.set(hook.id, hook)
    return { status: 200, body: { id: hook.id, url: hook.url, enabled: hook.enabled } }
  }
}
