import type { Request, Response, Router } from 'express'
import { z } from 'zod'
import type { licensingPaymentsContract } from '../contract/licensing'
import type { Handlers } from '../contract/define'
import { ApiError } from '../contract/errors'
import { publicBaseUrl } from '../config/publicUrl'
import type { Clock } from '../lib/clock'
import { asDatabaseFull, DatabaseFull } from '../lib/files'
import type { Logger } from '../lib/logger'
import { invoicesCsv } from './exports'
import { InvoiceStore } from './invoices'
import { mountPages } from './pages/routes'
import { ProviderConnections, type ProviderFactory } from './providers/connections'
import { BtcpayAuthorizations } from './providers/btcpayAuthorize'
import { ProviderWebhooks } from './providers/inbound'
import type { ProviderKind } from './providers/types'
import { Purchases } from './purchase'
import { readBody } from '../http/body'
import { Reconciler } from './reconcile'
import { recoverByInvoice } from './recovery'
import { RenewalWorker } from './renewals'
import type { LicensingServices } from './licensingServices'
import { Settlement, type LicenseIssuer } from './settlement'
import { isRecurring, Subscriptions } from './subscriptions'
import { tierChangeSettleBranch, TierChanges } from './tierChanges'
import { topUpSettleBranch, TopUpSales } from './topUpSales'
import { OutboundWebhooks, type Poster } from './webhooksOut'

const WEBHOOK_BODY_LIMIT = 256 * 1024
/** A Keysat provider id in a webhook path (a UUID there; any short token is accepted). */
const PROVIDER_ID = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/)
/** A pending invoice being polled is re-checked at its provider at most this often. */
const POLL_RECHECK_MS = 15_000

export interface PaymentsOptions {
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
  readonly subscriptions: Subscriptions
  readonly renewals: RenewalWorker
  readonly tierChanges: TierChanges
  readonly topUps: TopUpSales
  readonly btcpayAuth: BtcpayAuthorizations
  mountRoutes(router: Router): void
  start(): void
  stop(): Promise<void>
}

/** The payment services, wired over the licensing core: what handlers, routes and workers use. */
interface PaymentParts {
  readonly services: LicensingServices
  /** DATA_DIR: a SQLite I/O error there counts as a full disk when it has no room. */
  readonly dataDir: string
  readonly log: Logger
  readonly invoices: InvoiceStore
  readonly providers: ProviderConnections
  readonly outbox: OutboundWebhooks
  readonly settlement: Settlement
  readonly purchases: Purchases
  readonly inbound: ProviderWebhooks
  readonly reconciler: Reconciler
  readonly subscriptions: Subscriptions
  readonly renewals: RenewalWorker
  readonly tierChanges: TierChanges
  readonly topUps: TopUpSales
  readonly btcpayAuth: BtcpayAuthorizations
}

/**
 * Settlement issues licenses through the licensing core (a recurring tier's with its subscription);
 * a used discount is confirmed or released with it.
 */
function settlementOver(
  services: LicensingServices,
  log: Logger,
  outbox: OutboundWebhooks,
  subscriptions: Subscriptions,
): Settlement {
  const { db, audit, catalog, licenses, discounts } = services
  const issuer: LicenseIssuer = {
    issueForInvoice(inv, now) {
      const product = catalog.productRow(inv.product_id)
      if (!product) throw new Error(`invoice ${inv.id} names a missing product`)
      const policy = (inv.policy_id ? catalog.policyRow(inv.policy_id) : undefined) ?? catalog.resolvePolicy(product)
      if (isRecurring(policy)) return subscriptions.issueRecurring(inv, product, policy, now)
      const { license, key } = licenses.issuing.issue({
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
  return new Settlement({
    db,
    clock: services.deps.clock,
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
    // The buyer's gateway key lives in the gateway's database: issued, or moved to the new tier, once this commits.
    afterCommit: (o) => {
      if (o.kind === 'issued') licenses.access.afterPurchase(o.licenseId)
      else if (o.kind === 'handled' && o.branch === 'tier_change' && o.licenseId)
        licenses.access.followTier(o.licenseId)
    },
  })
}

function wirePayments(services: LicensingServices, opts: PaymentsOptions): PaymentParts {
  const { db, audit, catalog, discounts, pricing, licenses } = services
  const { clock, logger, config } = services.deps
  const log = logger.child('payments')
  const publicUrl = (): string => publicBaseUrl(config)
  const invoices = new InvoiceStore(db)
  const providers = new ProviderConnections(db, clock, log, audit, publicUrl, opts.providerFactory)
  const outbox = new OutboundWebhooks({
    db,
    clock,
    logger: log.child('webhooks'),
    audit,
    post: opts.post,
    dataDir: config.paths.dataDir,
  })
  const subscriptions = new Subscriptions({ db, clock, logger: log.child('subscriptions'), audit, licenses, outbox })
  const settlement = settlementOver(services, log, outbox, subscriptions)
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
    redirectAllowlist: config.redirectAllowlist,
  })
  const tierChanges = new TierChanges({ services, purchases, outbox, publicUrl })
  // Spec 001 §4.3: the tier-change check first, then the subscription renewal; issuance stays last.
  settlement.addBranch(tierChangeSettleBranch(tierChanges))
  settlement.addBranch(subscriptions.renewalBranch())
  const topUps = new TopUpSales({ services, purchases, outbox, publicUrl })
  settlement.addBranch(topUpSettleBranch(topUps))
  const renewals = new RenewalWorker({
    db,
    clock,
    logger: log.child('renewals'),
    subscriptions,
    purchases,
    pricing,
    settlement,
    outbox,
    applyDueDowngrades: (now) => tierChanges.applyDueDowngrades(now),
    dataDir: config.paths.dataDir,
  })
  const inbound = new ProviderWebhooks({ logger: log, invoices, providers, settlement })
  const reconciler = new Reconciler({
    clock,
    logger: log.child('reconcile'),
    invoices,
    providers,
    settlement,
    dataDir: config.paths.dataDir,
  })
  const btcpayAuth = new BtcpayAuthorizations({
    db,
    clock,
    logger: log,
    providers,
    factory: providers.factory,
    publicUrl,
  })
  return {
    services,
    dataDir: config.paths.dataDir,
    log,
    invoices,
    providers,
    outbox,
    settlement,
    purchases,
    inbound,
    reconciler,
    subscriptions,
    renewals,
    tierChanges,
    topUps,
    btcpayAuth,
  }
}

/**
 * Buyers poll while they pay: a pending invoice gets an early provider check (bounded per
 * invoice), so a lost webhook costs seconds rather than a reconciliation sweep.
 */
function pollNudger(clock: Clock, reconciler: Reconciler, log: Logger): (invoiceId: string) => void {
  const lastNudge = new Map<string, number>()
  return (invoiceId) => {
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
}

function paymentsHandlers(p: PaymentParts): PaymentsHandlers {
  const { invoices, providers, outbox, purchases, reconciler } = p
  const nudge = pollNudger(p.services.deps.clock, reconciler, p.log)
  const mustInvoice = (id: string) => {
    const v = invoices.view(id)
    if (!v) throw new ApiError('not_found', 'no such invoice')
    return v
  }
  return {
    licPurchase: async (input, ctx) => purchases.start(input, ctx.signal),
    licPurchaseStatus: async ({ id }) => {
      const out = purchases.poll(id)
      if (out.status === 'pending') nudge(id)
      return out
    },
    licAdminInvoices: async (q) => invoices.list(q),
    licAdminExportInvoices: async (q) => invoicesCsv((max) => invoices.matching(q, max), p.services.deps.clock.now()),
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
    licAdminBtcpayAuthorize: async (i) => p.btcpayAuth.start({ baseUrl: i.base_url, storeId: i.store_id }),
    licAdminForgetProvider: async ({ provider }) => providers.forget(provider),
    licAdminBtcpayDisconnect: async () => providers.disconnect('btcpay'),
    licAdminBtcpayStatus: async () => providers.status(),
    licAdminZapriteConnect: async (i, ctx) =>
      providers.connectZaprite({ apiKey: i.api_key, baseUrl: i.base_url }, ctx.signal),
    licAdminZapriteDisconnect: async () => providers.disconnect('zaprite'),
    licAdminZapriteStatus: async () => providers.status(),
    licAdminWebhookEndpoints: async (q) => outbox.endpoints(q),
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
}

/**
 * Where BTCPay sends the operator's browser after consenting (a form POST, or a GET with the
 * fields in the query). The single-use state authorizes it, not the admin session: a cross-site
 * POST carries no session cookie. Answers with a redirect back to the admin's provider tab.
 */
async function btcpayCallback(p: PaymentParts, req: Request, res: Response): Promise<void> {
  const back = (outcome: string): void => {
    res.redirect(303, `/#/licensing?tab=payments&btcpay=${encodeURIComponent(outcome)}`)
  }
  if (req.method !== 'GET' && req.method !== 'POST') {
    res.status(405).json({ ok: false, error: 'method_not_allowed', message: 'GET or POST' })
    return
  }
  try {
    const query = new URL(req.originalUrl, 'http://callback.invalid').searchParams
    const fields =
      req.method === 'POST' ? new URLSearchParams((await readBody(req, WEBHOOK_BODY_LIMIT)).toString('utf8')) : query
    await p.btcpayAuth.complete(query.get('state'), fields)
    back('connected')
  } catch (err) {
    const full = asDatabaseFull(err, p.dataDir, 'save the BTCPay connection')
    // An ApiError, or a full disk naming what could not be saved, is told as it is.
    const msg =
      full instanceof ApiError || full instanceof DatabaseFull
        ? full.message
        : 'the authorization could not be completed'
    if (!(err instanceof ApiError)) p.log.error('BTCPay authorization callback failed', { error: err })
    else p.log.warn(`BTCPay authorization refused: ${msg}`)
    back(`error: ${msg}`)
  }
}

/**
 * A webhook's failure as answered to the provider: a full disk is 507 naming what could not be
 * recorded (a 5xx, so the provider sends it again later), anything unexpected a 500.
 */
function webhookError(err: unknown, dataDir: string, kind: ProviderKind): ApiError {
  if (err instanceof ApiError) return err
  const full = asDatabaseFull(err, dataDir, `record the ${kind} payment webhook`)
  if (full instanceof DatabaseFull) return new ApiError('insufficient_storage', full.message)
  return new ApiError('internal', 'webhook handling failed')
}

/** Provider webhooks (raw bodies: BTCPay signs the exact bytes) and the public buy pages. */
function mountPaymentRoutes(router: Router, p: PaymentParts): void {
  const webhookRoute = (kind: ProviderKind) => async (req: Request, res: Response) => {
    try {
      const raw = await readBody(req, WEBHOOK_BODY_LIMIT)
      const answer = await p.inbound.handle(kind, req.headers, raw)
      res.status(answer.status).json(answer.body)
    } catch (err) {
      const e = webhookError(err, p.dataDir, kind)
      if (!(err instanceof ApiError)) p.log.error(`${kind} webhook failed`, { error: err })
      res.status(e.status).json({ ok: false, error: e.code, message: e.message })
    }
  }
  /**
   * Keysat registers `/v1/{kind}/webhook/:provider_id` at the provider. Tandem holds one connection
   * per kind, whose secret verifies the body, so the id only has to be well-formed.
   */
  const perProvider = (kind: ProviderKind) => async (req: Request, res: Response) => {
    if (!PROVIDER_ID.safeParse(req.params.provider_id).success) {
      res.status(404).json({ ok: false, error: 'not_found', message: 'no such webhook path' })
      return
    }
    await webhookRoute(kind)(req, res)
  }
  // The spec's provider_a/provider_b paths are the same handlers.
  router.post(['/v1/btcpay/webhook', '/v1/provider_a/webhook'], webhookRoute('btcpay'))
  router.post('/v1/btcpay/webhook/:provider_id', perProvider('btcpay'))
  router.all('/v1/btcpay/authorize/callback', (req, res) => btcpayCallback(p, req, res))
  router.post(['/v1/zaprite/webhook', '/v1/provider_b/webhook'], webhookRoute('zaprite'))
  router.post('/v1/zaprite/webhook/:provider_id', perProvider('zaprite'))
  mountPages(router, {
    logger: p.log.child('pages'),
    dataDir: p.dataDir,
    catalog: p.services.catalog,
    purchases: p.purchases,
    limits: p.services.deps.limits,
    recover: async (key) => p.services.licenses.recovery.recover(key),
    recoverByInvoice: async (invoiceId, email) => recoverByInvoice(p.services, invoiceId, email),
    satsOf: (currency, value) =>
      p.services.pricing.toSats(value, currency).then(
        (r) => r.sats,
        () => null,
      ),
    cachedRate: (currency) => p.services.rates.cached(currency),
    previewDiscount: (input) => p.services.pricing.preview(input),
    account: {
      subscriptionOf: (licenseId) => p.subscriptions.forLicense(licenseId),
      quote: (input) => p.tierChanges.quote(input),
      upgrade: (input) => p.tierChanges.upgrade(input),
      topUpOffer: (licenseId) => p.topUps.offerFor(licenseId),
      buyTopUp: (licenseKey) => p.topUps.start({ license_key: licenseKey }),
    },
    gatewayKey: (licenseId) => p.services.licenses.access.revealOnce(licenseId),
    invoiceExtras: (id) => {
      const v = p.invoices.view(id)
      return {
        product_name: v?.product_name ?? null,
        buyer_email: v?.buyer_email ?? null,
        buyer_note: v?.buyer_note ?? null,
        kind: v?.kind ?? null,
        top_up_tokens: p.topUps.tokensOf(id),
      }
    },
  })
}

/**
 * Licensing payments: purchases, invoices, settlement, the payment providers and their webhooks,
 * reconciliation, outbound webhooks and the public pages, built over the catalog, pricing,
 * discounts and licenses.
 */
export function createPayments(services: LicensingServices, opts: PaymentsOptions = {}): Payments {
  const parts = wirePayments(services, opts)
  const { providers, settlement, outbox, reconciler, purchases, subscriptions, renewals, tierChanges, topUps } = parts
  return {
    handlers: paymentsHandlers(parts),
    providers,
    settlement,
    outbox,
    reconciler,
    purchases,
    subscriptions,
    renewals,
    tierChanges,
    topUps,
    btcpayAuth: parts.btcpayAuth,
    mountRoutes: (router) => mountPaymentRoutes(router, parts),
    start() {
      outbox.start()
      reconciler.start()
      renewals.start()
    },
    async stop() {
      await renewals.stop()
      await reconciler.stop()
      await outbox.stop()
    },
  }
}
