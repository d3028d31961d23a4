import type { Request, Response, Router } from 'express'
import type { z } from 'zod'
import {
  DiscountPreviewInput,
  PurchaseInput,
  RecoverInput,
  type Currency,
  type DiscountPreview,
  type PurchaseStatus,
  type RecoverResponse,
  type SubscriptionView,
  type TopUpStarted,
  type UpgradeQuote,
  type UpgradeStarted,
} from '../../contract/licensing'
import { priceLine } from '../../../src-shared/priceLine'
import { ApiError } from '../../contract/errors'
import { asDatabaseFull, DatabaseFull } from '../../lib/files'
import type { Logger } from '../../lib/logger'
import { limitHeaders, type Limits } from '../../platform/limits'
import { requestState } from '../../http/requestState'
import type { Catalog } from '../productCatalog'
import { effectivePrice } from '../productCatalog'
import { parseStringList } from '../json'
import type { Purchases } from '../purchase'
import { readBody } from '../../http/body'
import { isSatsCurrency } from '../productCatalog'
import type { FiatCurrency } from '../rates'
import { PAGES_CSS, PAGES_ICON, PAGES_JS } from './assets'
import { PAGES_CSP } from './html'
import type { KeyReveal } from '../gatewayAccess'
import type { TopUpOffer } from '../topUpSales'
import { thankYouPage, thankYouState } from './thankYou'
import {
  buyPage,
  checkoutRedirectPage,
  errorPage,
  productNotFoundPage,
  recoverPage,
  unknownPurchasePage,
  upgradeQuotePage,
  type AccountModel,
  type BuyTier,
  type FiatView,
  type UpgradeOption,
} from './views'

const FORM_LIMIT = 32 * 1024
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

export interface PagesDeps {
  logger: Logger
  /** DATA_DIR: a SQLite I/O error there counts as a full disk when it has no room. */
  dataDir?: string
  catalog: Catalog
  purchases: Purchases
  /** Details the thank-you page shows beside the poll answer. */
  invoiceExtras(id: string): {
    product_name: string | null
    buyer_email: string | null
    buyer_note: string | null
    kind: string | null
    /** A top-up invoice's tokens; null for any other invoice. */
    top_up_tokens: number | null
  }
  recover(key: string): Promise<RecoverResponse>
  /** Recover by the invoice id and the e-mail given at checkout (same 404 for every mismatch). */
  recoverByInvoice(invoiceId: string, email: string): Promise<RecoverResponse>
  /** A listed price in sats (a rate fetched on demand), or null when no rate is available now. */
  satsOf(currency: Currency, value: number): Promise<number | null>
  /** A rate already cached (never fetched): the buy page's "about" figures wait for one. */
  cachedRate(currency: FiatCurrency): { centibps: number } | null
  /** `POST /v1/discount-codes/preview`: a code priced for a tier, nothing reserved. */
  previewDiscount(input: { productSlug: string; policy?: string; code: string }): Promise<DiscountPreview>
  limits: Limits
  /** The subscription state and upgrade path under a license. */
  account: BuyerAccountDeps
  /** The thank-you page's gateway key: a new secret on the first view, later when it was shown. */
  gatewayKey(licenseId: string): KeyReveal | null
}

type TierTarget = { license_key: string; target_policy_slug: string }

/** The same service calls as `/v1/upgrade-quote`, `/v1/upgrade`, and the subscription of a license. */
export interface BuyerAccountDeps {
  subscriptionOf(licenseId: string): z.infer<typeof SubscriptionView> | null
  quote(input: TierTarget): Promise<z.infer<typeof UpgradeQuote>>
  upgrade(input: TierTarget): Promise<z.infer<typeof UpgradeStarted>>
  /** The top-up pack the license may buy now (`POST /v1/top-ups` sells it); null: none. */
  topUpOffer(licenseId: string): TopUpOffer | null
  buyTopUp(licenseKey: string): Promise<TopUpStarted>
}

function send(res: Response, status: number, body: string): void {
  res.status(status)
  res.setHeader('Content-Security-Policy', PAGES_CSP)
  res.setHeader('Cache-Control', 'no-store')
  res.setHeader('X-Frame-Options', 'DENY')
  res.type('html').send(body)
}

/** Reads a urlencoded form body ourselves: no global body parser runs for these routes. */
async function readForm(req: Request): Promise<URLSearchParams> {
  const type = req.headers['content-type'] ?? ''
  if (!type.startsWith('application/x-www-form-urlencoded'))
    throw new ApiError('bad_input', 'expected a form submission')
  return new URLSearchParams((await readBody(req, FORM_LIMIT)).toString('utf8'))
}

function isHttpUrl(u: string | null): u is string {
  if (!u) return false
  try {
    const p = new URL(u)
    return p.protocol === 'http:' || p.protocol === 'https:'
  } catch {
    return false
  }
}

/** A provider's checkout link, refused unless it is http(s): the page redirects the buyer to it. */
function usableCheckoutUrl(url: string | null): string {
  if (!isHttpUrl(url)) throw new ApiError('upstream_error', 'the payment provider returned an unusable checkout link')
  return url
}

/**
 * The error a page shows: an ApiError as it is; a full disk a 507 saying what could not be saved
 * (`saving`, in the buyer's words; where is the operator's, in the log); anything else is logged
 * and worded generically.
 */
function pageError(deps: PagesDeps, failure: string, err: unknown, saving: string): ApiError {
  if (err instanceof ApiError) return err
  deps.logger.error(failure, { error: err })
  if (asDatabaseFull(err, deps.dataDir, failure) instanceof DatabaseFull)
    return new ApiError(
      'insufficient_storage',
      `${saving} could not be saved: the server is out of disk space; please try again later`,
    )
  return new ApiError('internal', 'something went wrong; please try again')
}

const PRICE_UNAVAILABLE =
  'The price is temporarily unavailable: no exchange rate could be fetched right now. Please try again in a minute.'

const FIAT_SHOWN: readonly FiatCurrency[] = ['USD', 'EUR']

/** The currency "about" figures are in: the buyer's pick among cached rates, else the first cached; null when none is. */
function fiatView(deps: PagesDeps, asked: unknown): FiatView | null {
  const cached = FIAT_SHOWN.flatMap((currency) => {
    const rate = deps.cachedRate(currency)
    return rate ? [{ currency, centibps: rate.centibps }] : []
  })
  const shown = cached.find((r) => r.currency === asked) ?? cached[0]
  return shown ? { ...shown, choices: cached.map((r) => r.currency) } : null
}

type BuyModel = NonNullable<ReturnType<typeof buyModel>> & { priceUnavailable: boolean; fiat: FiatView | null }

/**
 * The buy page's model: tiers by ascending price in sats, then rank (the order of the public tier
 * list), each fiat-priced tier with its sats; `priceUnavailable` when a tier cannot be converted
 * to sats right now; `fiat` from cached rates only.
 */
async function buyPageModel(deps: PagesDeps, slug: string, currency: unknown): Promise<BuyModel | null> {
  const model = buyModel(deps.catalog, slug)
  if (!model) return null
  const fiat = fiatView(deps, currency)
  const sats = await Promise.all(model.tiers.map((t) => deps.satsOf(t.currency, t.value)))
  if (sats.includes(null)) return { ...model, fiat, priceUnavailable: true }
  const last = Number.MAX_SAFE_INTEGER
  const tiers = model.tiers
    .map((t, i) => ({ t: { ...t, sats: isSatsCurrency(t.currency) ? null : (sats[i] ?? null) }, sats: sats[i] ?? 0 }))
    .sort((a, b) => a.sats - b.sats || (a.t.tierRank ?? last) - (b.t.tierRank ?? last))
    .map(({ t }) => t)
  return { ...model, tiers, fiat, priceUnavailable: false }
}

/** The buy page's model: an active product and its public tiers, cheapest first; null when there is none. */
function buyModel(
  catalog: Catalog,
  slug: string,
): { product: { slug: string; name: string; description: string }; tiers: BuyTier[] } | null {
  const product = catalog.productBySlug(slug)
  if (!product || product.active !== 1) return null
  const tiers = catalog
    .policyRows(product.id)
    .filter((p) => p.active === 1 && p.public === 1)
    .map((p) => {
      const price = effectivePrice(product, p)
      return {
        slug: p.slug,
        name: p.name,
        description: p.description,
        currency: price.currency,
        value: price.value,
        entitlements: parseStringList(p.entitlements),
        maxMachines: p.max_machines,
        durationDays: p.duration_days,
        isRecurring: p.is_recurring === 1,
        renewalPeriodDays: p.renewal_period_days,
        trialDays: p.trial_days,
        highlighted: p.highlighted === 1,
        tierRank: p.tier_rank,
      }
    })
  return { product: { slug: product.slug, name: product.name, description: product.description }, tiers }
}

/** Tiers of the license's product ranked above its current one (buyers only move up the ladder). */
function upgradeOptions(catalog: Catalog, productId: string, policySlug: string | null): UpgradeOption[] {
  const product = catalog.productRow(productId)
  const current = policySlug ? catalog.policyBySlug(productId, policySlug) : undefined
  if (!product || !current || current.tier_rank === null) return []
  const rank = current.tier_rank
  return catalog
    .policyRows(productId)
    .filter((p) => p.active === 1 && p.public === 1 && p.tier_rank !== null && p.tier_rank > rank)
    .sort((a, b) => (a.tier_rank ?? 0) - (b.tier_rank ?? 0))
    .map((p) => {
      const price = effectivePrice(product, p)
      return {
        slug: p.slug,
        name: p.name,
        price: priceLine({
          currency: price.currency,
          value: price.value,
          isRecurring: p.is_recurring === 1,
          renewalPeriodDays: p.renewal_period_days,
          trialDays: 0,
          durationDays: p.duration_days,
        }),
      }
    })
}

function accountModel(
  deps: PagesDeps,
  l: { license_id: string | null; license_key: string | null; product_id: string; policy_slug: string | null },
): AccountModel | null {
  if (!l.license_id || !l.license_key) return null
  return {
    key: l.license_key,
    subscription: deps.account.subscriptionOf(l.license_id),
    upgrades: upgradeOptions(deps.catalog, l.product_id, l.policy_slug),
    topUp: deps.account.topUpOffer(l.license_id),
  }
}

/** The upgrade forms: quote (read-only), then pay (the server recomputes the charge). */
async function submitUpgrade(deps: PagesDeps, step: 'quote' | 'pay', req: Request, res: Response): Promise<void> {
  const account = deps.account
  try {
    const f = await readForm(req)
    const input = {
      license_key: (f.get('key') ?? '').trim().slice(0, 16_384),
      target_policy_slug: f.get('target') ?? '',
    }
    if (step === 'quote') {
      const quote = await account.quote(input)
      return send(res, 200, upgradeQuotePage({ key: input.license_key, quote }))
    }
    const started = await account.upgrade(input)
    send(res, 200, checkoutRedirectPage(usableCheckoutUrl(started.checkout_url), started.invoice_id))
  } catch (err) {
    const e = pageError(deps, 'upgrade page failed', err, 'Your upgrade')
    send(res, e.status, errorPage('Upgrade', e.message))
  }
}

/** The top-up form: the same service call as `POST /v1/top-ups`, then on to the checkout. */
async function submitTopUp(deps: PagesDeps, req: Request, res: Response): Promise<void> {
  try {
    const f = await readForm(req)
    const started = await deps.account.buyTopUp((f.get('key') ?? '').trim().slice(0, 16_384))
    const there = 'which says when the tokens were added'
    send(res, 200, checkoutRedirectPage(usableCheckoutUrl(started.checkout_url), started.invoice_id, there))
  } catch (err) {
    const e = pageError(deps, 'top-up page failed', err, 'Your top-up')
    send(res, e.status, errorPage('Top-up', e.message))
  }
}

/** The buy form's fields as posted (absent ones empty), kept to refill the form after an error. */
function buyFormFields(f: URLSearchParams): Record<string, string> {
  return {
    policy: f.get('policy') ?? '',
    buyer_email: f.get('buyer_email') ?? '',
    code: f.get('code') ?? '',
    buyer_note: f.get('buyer_note') ?? '',
  }
}

/** The purchase a buy form asks for, checked like the API's input; the error names the first bad field. */
function purchaseFromForm(productSlug: string, form: Record<string, string>): PurchaseInput {
  const input = PurchaseInput.safeParse({
    product: productSlug,
    policy: form.policy || undefined,
    buyer_email: form.buyer_email,
    code: form.code,
    buyer_note: form.buyer_note || undefined,
  })
  if (!input.success) {
    const issue = input.error.issues[0]
    throw new ApiError('bad_input', `${issue?.path.join('.') || 'form'}: ${issue?.message ?? 'invalid'}`)
  }
  return input.data
}

/** "Apply code": the code priced for the chosen tier like a purchase would price it, nothing reserved. */
async function previewFromForm(
  deps: PagesDeps,
  model: BuyModel,
  form: Record<string, string>,
): Promise<DiscountPreview> {
  const tier = model.tiers.find((t) => t.slug === form.policy)
  // As a purchase: a trial's first cycle is free and ignores any code.
  if (tier?.isRecurring && tier.trialDays > 0)
    throw new ApiError('bad_input', 'This tier starts with a free trial, so a discount code does not apply to it.')
  const input = DiscountPreviewInput.safeParse({
    product: model.product.slug,
    policy: form.policy || undefined,
    code: form.code,
  })
  if (!input.success) throw new ApiError('bad_input', 'Enter a discount code to apply.')
  const preview = await deps.previewDiscount({
    productSlug: input.data.product,
    policy: input.data.policy,
    code: input.data.code,
  })
  if (preview.kind === 'free_license')
    throw new ApiError('bad_input', `Code ${preview.code} gives a free license; it cannot be used at checkout.`)
  return preview
}

/**
 * A buy-page form post: "Apply code" shows the price after the code; otherwise start the purchase
 * and send the buyer to checkout. Either way an error goes back to the form.
 */
async function submitBuyForm(deps: PagesDeps, model: BuyModel, req: Request, res: Response): Promise<void> {
  let form: Record<string, string> = {}
  try {
    const fields = await readForm(req)
    form = buyFormFields(fields)
    if (fields.get('intent') === 'preview') {
      const preview = await previewFromForm(deps, model, form)
      return send(res, 200, buyPage({ ...model, form, preview }))
    }
    const session = await deps.purchases.start(purchaseFromForm(model.product.slug, form))
    if (session.status === 'settled') {
      res.redirect(303, `/thank-you?invoice=${session.invoice_id}`)
      return
    }
    send(res, 200, checkoutRedirectPage(usableCheckoutUrl(session.checkout_url), session.invoice_id))
  } catch (err) {
    const e = pageError(deps, 'buy page failed', err, 'Your order')
    const unavailable = e.code === 'rate_unavailable'
    if (unavailable) res.setHeader('Retry-After', e.headers['Retry-After'] ?? '60')
    send(
      res,
      e.status,
      buyPage({ ...model, form, error: unavailable ? PRICE_UNAVAILABLE : e.message, priceUnavailable: unavailable }),
    )
  }
}

type RecoverForm = { key?: string; invoice_id?: string; email?: string }

/** The recover form: a key, or the invoice id and e-mail (validated like the API's input). */
async function recoverFromForm(deps: PagesDeps, form: RecoverForm): Promise<RecoverResponse> {
  if (form.key) return deps.recover(form.key)
  const input = RecoverInput.safeParse({ invoice_id: form.invoice_id || undefined, email: form.email || undefined })
  if (!input.success || !input.data.invoice_id || !input.data.email)
    throw new ApiError('bad_input', 'Paste your license key, or give the invoice id and the e-mail you paid with.')
  return deps.recoverByInvoice(input.data.invoice_id, input.data.email)
}

/** Public pages: `/buy/:slug`, `/thank-you`, `/recover`, the upgrade forms under `/buy/upgrade/`, the top-up form `/buy/top-up/pay`, and their one stylesheet and script. */
export function mountPages(router: Router, deps: PagesDeps): void {
  const limited = (req: Request, res: Response): boolean => {
    const state = deps.limits.take('public', requestState(res).client.limitKey)
    for (const [k, v] of Object.entries(limitHeaders(state))) res.setHeader(k, v)
    if (state.ok) return false
    send(res, 429, errorPage('Slow down', 'Too many requests from your address; try again in a moment.'))
    return true
  }

  router.get('/buy/assets/pages.css', (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=3600')
    res.type('text/css').send(PAGES_CSS)
  })
  router.get('/buy/assets/pages.js', (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=3600')
    res.type('application/javascript').send(PAGES_JS)
  })

  for (const iconPath of ['/buy/assets/favicon.svg', '/favicon.ico'])
    router.get(iconPath, (_req, res) => {
      res.setHeader('Cache-Control', 'public, max-age=86400')
      res.type('image/svg+xml').send(PAGES_ICON)
    })

  router.get('/buy/:slug', async (req, res) => {
    if (limited(req, res)) return
    const model = await buyPageModel(deps, String(req.params.slug), req.query.currency)
    if (!model) return send(res, 404, productNotFoundPage())
    send(res, 200, buyPage(model.priceUnavailable ? { ...model, error: PRICE_UNAVAILABLE } : model))
  })

  router.post('/buy/:slug', async (req, res) => {
    if (limited(req, res)) return
    const model = await buyPageModel(deps, String(req.params.slug), req.query.currency)
    if (!model) return send(res, 404, productNotFoundPage())
    await submitBuyForm(deps, model, req, res)
  })

  router.get('/thank-you', (req, res) => {
    if (limited(req, res)) return
    const raw = req.query.invoice ?? req.query.id
    const given = typeof raw === 'string' ? raw.slice(0, 200) : ''
    if (!UUID.test(given)) return send(res, 404, unknownPurchasePage(given))
    let status: PurchaseStatus
    try {
      status = deps.purchases.poll(given)
    } catch {
      return send(res, 404, unknownPurchasePage(given))
    }
    const model = { ...status, ...deps.invoiceExtras(given) }
    const issued = thankYouState(model) === 'issued' && status.license_id !== null
    const gateway = issued ? deps.gatewayKey(status.license_id!) : null
    send(res, 200, thankYouPage(model, accountModel(deps, status), gateway))
  })

  router.get('/recover', (req, res) => {
    if (limited(req, res)) return
    send(res, 200, recoverPage({}))
  })

  router.post('/recover', async (req, res) => {
    if (limited(req, res)) return
    const slow = deps.limits.take('recover', requestState(res).client.limitKey)
    if (!slow.ok) {
      for (const [k, v] of Object.entries(limitHeaders(slow))) res.setHeader(k, v)
      return send(
        res,
        429,
        recoverPage({ error: 'Too many recovery attempts from your address; try again in a minute.' }),
      )
    }
    const form: RecoverForm = {}
    try {
      const f = await readForm(req)
      form.key = (f.get('key') ?? '').trim().slice(0, 16_384)
      form.invoice_id = (f.get('invoice_id') ?? '').trim().slice(0, 64)
      form.email = (f.get('email') ?? '').trim().slice(0, 254)
      const result = await recoverFromForm(deps, form)
      send(res, 200, recoverPage({ result, account: accountModel(deps, result) }))
    } catch (err) {
      const e = pageError(deps, 'recover page failed', err, 'Your request')
      send(res, e.status, recoverPage({ ...form, error: e.message }))
    }
  })

  router.post('/buy/upgrade/quote', async (req, res) => {
    if (limited(req, res)) return
    await submitUpgrade(deps, 'quote', req, res)
  })

  router.post('/buy/upgrade/pay', async (req, res) => {
    if (limited(req, res)) return
    await submitUpgrade(deps, 'pay', req, res)
  })

  router.post('/buy/top-up/pay', async (req, res) => {
    if (limited(req, res)) return
    await submitTopUp(deps, req, res)
  })
}
