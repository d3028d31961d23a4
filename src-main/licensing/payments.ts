import type { Request, Response, Router } from 'express'
import type { licensingPaymentsContract } from '../contract/licensing'
import type { CallContext, Handlers } from '../contract/define'
import { ApiError } from '../contract/errors'
import { publicBaseUrl } from '../config/publicUrl'
import type { BuyerLimits } from './buyerApi'
import { InvoiceStore } from './invoices'
import { mountPages } from './pages/routes'
import { ProviderConnections, type ProviderFactory } from './providers/connections'
import { ProviderWebhooks } from './providers/inbound'
import type { ProviderKind } from './providers/types'
import { Purchases } from './purchase'
import { readBody } from '../http/body'
import { Reconciler } from './reconcile'
import type { LicensingServices } from './services'
import { Settlement, type LicenseIssuer } from './settlement'
import { OutboundWebhooks, type Poster } from './webhooksOut'

const WEBHOOK_BODY_LIMIT = 256 * 1024
/** A pending invoice being polled is re-checked at its provider at most this often. */
const POLL_RECHECK_MS = 15_000

export interface PaymentsOptions {
  /** The per-address limits shared by every public licensing endpoint and page. */
  limits: BuyerLimits
  /** Tests swap in providers or an outbound poster; production uses the real ones. */
  providerFactory?: ProviderFactory
  post?: Poster
}

export type PaymentsHandlers = Handlers<typeof licensingPaymentsContract>

export interface Payments {
  readonly handlers: PaymentsHandlers
  readonly providers: ProviderConnections
  readonly settlement: Settlement
  readonly outbox: OutboundWebhooks
  readonly reconciler: Reconciler
  readonly purchases: Purchases
  mountRoutes(router: Router): void
  start(): void
  stop(): Promise<void>
}

/**
 * Part B of licensing: purchases, invoices, settlement, the payment providers and their webhooks,
 * reconciliation, outbound webhooks and the public pages, built over part A's catalog, pricing,
 * discounts and licenses.
 */
export function createPayments(services: LicensingServices, opts: PaymentsOptions): Payments {
  const { db, audit, catalog, licenses, discounts, pricing } = services
  const { clock, logger, config } = services.deps
  const log = logger.child('payments')
  const publicUrl = (): string => publicBaseUrl(config)
  const invoices = new InvoiceStore(db)
  const providers = new ProviderConnections(db, clock, log, audit, publicUrl, opts.providerFactory)
  const outbox = new OutboundWebhooks({ db, clock, logger: log.child('webhooks'), audit, post: opts.post })

  const issuer: LicenseIssuer = {
    issueForInvoice(inv) {
      const product = catalog.productRow(inv.product_id)
      if (!product) throw new Error(`invoice ${inv.id} names a missing product`)
      const policy = (inv.policy_id ? catalog.policyRow(inv.policy_id) : undefined) ?? catalog.resolvePolicy(product)
      const { license, key } = licenses.issue({
        product,
        policy,
        source: 'purchase',
        invoiceId: inv.id,
        buyerEmail: inv.buyer_email,
        buyerNote: inv.buyer_note,
      })
      return { licenseId: license.id, licenseKey: key }
    },
  }
  const settlement = new Settlement({
    db,
    clock,
    logger: log,
    issuer,
    outbox,
    audit,
    discounts: {
      confirm: (invoiceId, licenseId) => {
        if (licenseId) discounts.markRedeemed(invoiceId, licenseId)
      },
      release: (invoiceId) => discounts.release(invoiceId),
    },
  })
  const purchases = new Purchases({
    db,
    clock,
    logger: log,
    invoices,
    providers,
    settlement,
    catalog,
    pricing,
    discounts,
    publicUrl,
  })
  const inbound = new ProviderWebhooks({ logger: log, invoices, providers, settlement })
  const reconciler = new Reconciler({ clock, logger: log.child('reconcile'), invoices, providers, settlement })

  // Buyers poll while they pay: a pending invoice gets an early provider check (bounded per
  // invoice), so a lost webhook costs seconds rather than a reconciliation sweep.
  const lastNudge = new Map<string, number>()
  const nudge = (invoiceId: string): void => {
    const now = clock.now()
    if (now - (lastNudge.get(invoiceId) ?? -Infinity) < POLL_RECHECK_MS) return
    if (lastNudge.size > 1000) {
      for (const [id, at] of lastNudge) if (now - at >= POLL_RECHECK_MS) lastNudge.delete(id)
    }
    lastNudge.set(invoiceId, now)
    reconciler
      .recheck(invoiceId)
      .catch((err: unknown) => log.warn('poll re-check failed', { invoice: invoiceId, error: err }))
  }

  const limit = (ctx: CallContext): void => {
    if (!opts.limits.take('public', ctx.clientIp)) {
      const after = Math.max(1, opts.limits.retryAfter('public', ctx.clientIp))
      throw new ApiError('rate_limited', 'too many requests from this address', {
        headers: { 'Retry-After': String(after) },
      })
    }
  }
  const mustInvoice = (id: string) => {
    const v = invoices.view(id)
    if (!v) throw new ApiError('not_found', 'no such invoice')
    return v
  }

  const handlers: PaymentsHandlers = {
    licPurchase: async (input, ctx) => {
      limit(ctx)
      return purchases.start(input, ctx.signal)
    },
    licPurchaseStatus: async ({ id }, ctx) => {
      limit(ctx)
      const out = purchases.poll(id)
      if (out.status === 'pending') nudge(id)
      return out
    },
    licAdminInvoices: async (q) => invoices.list(q),
    licAdminInvoice: async ({ id }) => mustInvoice(id),
    licAdminRecheckInvoice: async ({ id }) => {
      const outcome = await reconciler.recheck(id)
      return { outcome, invoice: mustInvoice(id) }
    },
    licAdminProviders: async () => providers.status(),
    licAdminActivateProvider: async ({ provider }) => providers.activate(provider),
    licAdminBtcpayConnect: async (i, ctx) =>
      providers.connectBtcpay(
        { baseUrl: i.base_url, storeId: i.store_id, apiKey: i.api_key, webhookSecret: i.webhook_secret },
        ctx.signal,
      ),
    licAdminBtcpayDisconnect: async () => providers.disconnect('btcpay'),
    licAdminBtcpayStatus: async () => providers.status(),
    licAdminZapriteConnect: async (i, ctx) =>
      providers.connectZaprite({ apiKey: i.api_key, baseUrl: i.base_url }, ctx.signal),
    licAdminZapriteDisconnect: async () => providers.disconnect('zaprite'),
    licAdminZapriteStatus: async () => providers.status(),
    licAdminWebhookEndpoints: async () => outbox.listEndpoints(),
    licAdminCreateWebhookEndpoint: async (input) => outbox.createEndpoint(input),
    licAdminUpdateWebhookEndpoint: async (patch) => outbox.updateEndpoint(patch),
    licAdminDeleteWebhookEndpoint: async ({ id }) => {
      outbox.deleteEndpoint(id)
      return { ok: true as const }
    },
    licAdminTestWebhookEndpoint: async ({ id }) => outbox.sendTest(id),
    licAdminWebhookDeliveries: async (q) => outbox.listDeliveries(q),
    licAdminRetryWebhookDelivery: async ({ id }) => outbox.retry(id),
  }

  const webhookRoute = (kind: ProviderKind) => async (req: Request, res: Response) => {
    try {
      const raw = await readBody(req, WEBHOOK_BODY_LIMIT)
      const answer = await inbound.handle(kind, req.headers, raw)
      res.status(answer.status).json(answer.body)
    } catch (err) {
      const e = err instanceof ApiError ? err : new ApiError('internal', 'webhook handling failed')
      if (!(err instanceof ApiError)) log.error(`${kind} webhook failed`, { error: err })
      res.status(e.status).json({ ok: false, error: e.code, message: e.message })
    }
  }

  return {
    handlers,
    providers,
    settlement,
    outbox,
    reconciler,
    purchases,
    mountRoutes(router) {
      // Raw bodies: BTCPay's signature is over the exact bytes. The spec's provider_a/provider_b
      // paths are the same handlers.
      router.post(['/v1/btcpay/webhook', '/v1/provider_a/webhook'], webhookRoute('btcpay'))
      router.post(['/v1/zaprite/webhook', '/v1/provider_b/webhook'], webhookRoute('zaprite'))
      mountPages(router, {
        logger: log.child('pages'),
        catalog,
        purchases,
        limits: opts.limits,
        recover: async (key) => licenses.recover(key),
        invoiceExtras: (id) => {
          const v = invoices.view(id)
          return {
            product_name: v?.product_name ?? null,
            buyer_email: v?.buyer_email ?? null,
            buyer_note: v?.buyer_note ?? null,
          }
        },
      })
    },
    start() {
      outbox.start()
      reconciler.start()
    },
    async stop() {
      await reconciler.stop()
      await outbox.stop()
    },
  }
}
