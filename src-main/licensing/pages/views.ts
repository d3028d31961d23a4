import type { z } from 'zod'
import type {
  AccessQuota,
  Currency,
  DiscountPreview,
  RecoverResponse,
  SubscriptionView as SubscriptionViewSchema,
  UpgradeQuote as UpgradeQuoteSchema,
} from '../../contract/licensing'
import { priceLine } from '../../../src-shared/priceLine'
import { formatMoney } from '../../../src-shared/money'
import { isSatsCurrency } from '../productCatalog'
import { satsToFiat, type FiatCurrency } from '../rates'
import type { TopUpOffer } from '../topUpSales'
import { html, page, type SafeHtml } from './html'

export interface BuyTier {
  slug: string
  name: string
  description: string
  currency: Currency
  value: number
  entitlements: string[]
  maxMachines: number
  durationDays: number
  isRecurring: boolean
  renewalPeriodDays: number
  trialDays: number
  highlighted: boolean
  tierRank?: number | null
  /** A fiat-priced tier's price in sats at the rate the page was priced with. */
  sats?: number | null
}

/** The fiat currency sats prices are shown "about" in, at a cached rate, and the currencies the buyer may pick. */
export interface FiatView {
  currency: FiatCurrency
  centibps: number
  choices: FiatCurrency[]
}

export interface BuyPageModel {
  product: { slug: string; name: string; description: string }
  tiers: BuyTier[]
  /** What the buyer typed, shown again after an error. */
  form?: { policy?: string; buyer_email?: string; code?: string; buyer_note?: string }
  error?: string
  /** No exchange rate right now: the tiers show, buying waits. */
  priceUnavailable?: boolean
  /** Null or absent: no rate cached, sats prices show alone. */
  fiat?: FiatView | null
  /** The code the buyer asked to apply, priced for the chosen tier. */
  preview?: DiscountPreview
}

function seats(n: number): string {
  return n === 0 ? 'unlimited machines' : n === 1 ? '1 machine' : `${n} machines`
}

function term(t: BuyTier): string {
  if (t.isRecurring) return `subscription, renews every ${t.renewalPeriodDays} days until cancelled`
  return t.durationDays > 0 ? `${t.durationDays} days` : 'perpetual'
}

type SubscriptionView = z.infer<typeof SubscriptionViewSchema>
type UpgradeQuote = z.infer<typeof UpgradeQuoteSchema>

/** A tier the license can move up to, with its price as the buy page words it. */
export interface UpgradeOption {
  slug: string
  name: string
  price: string
}

/** What the thank-you and recover pages show about a license beyond its key. */
export interface AccountModel {
  /** The signed key, posted back by the upgrade forms (the buyer already holds it). */
  key: string
  subscription: SubscriptionView | null
  upgrades: UpgradeOption[]
  /** The top-up pack the license may buy now; null: none. */
  topUp: TopUpOffer | null
}

const day = (ms: number): string => new Date(ms).toISOString().slice(0, 10)

function subscriptionState(s: SubscriptionView): SafeHtml {
  const price = priceLine({
    currency: s.listed_currency,
    value: s.listed_value,
    isRecurring: true,
    renewalPeriodDays: s.period_days,
    trialDays: 0,
    durationDays: 0,
  })
  const state = {
    active: `Active: renews on ${day(s.next_renewal_at)} (${price}).`,
    past_due: `Payment due since ${day(s.due_at)}: pay the renewal invoice the seller sent to keep the license.`,
    cancelled: `Cancelled: no further charge; the license stays valid until ${day(s.due_at)}.`,
    lapsed: 'Lapsed: the subscription ended without renewal payment.',
  }[s.status]
  const live = s.status === 'active' || s.status === 'past_due'
  return html`<section class="card" id="subscription" data-status="${s.status}">
    <h2>Subscription</h2>
    <p>${state}</p>
    ${
      live
        ? html`<p class="muted">
            Cancelling stops further charges and keeps the license valid until ${day(s.due_at)}: use “Cancel
            subscription” in the app, or ask the seller.
          </p>`
        : ''
    }
  </section>`
}

function upgradeForm(a: AccountModel): SafeHtml {
  if (a.upgrades.length === 0) return html``
  return html`<section class="card" id="upgrade">
    <h2>Upgrade</h2>
    <form method="post" action="/buy/upgrade/quote">
      <input type="hidden" name="key" value="${a.key}" />
      <fieldset class="tiers" aria-label="Choose a tier">
        ${a.upgrades.map(
          (u, i) =>
            html`<label class="tier">
              <input type="radio" name="target" value="${u.slug}" ${i === 0 ? html`checked` : ''} required />
              <strong>${u.name}</strong>
              <div class="price">${u.price}</div>
            </label>`,
        )}
      </fieldset>
      <button type="submit">See the price</button>
    </form>
  </section>`
}

/** "Buy N more tokens": starts the top-up's checkout (the price is recomputed on the server). */
function topUpForm(a: AccountModel): SafeHtml {
  if (!a.topUp) return html``
  const t = a.topUp
  return html`<section class="card" id="top-up">
    <h2>More tokens</h2>
    <p>They count in this period at once, even when its tokens are spent, and do not carry over.</p>
    <form method="post" action="/buy/top-up/pay">
      <input type="hidden" name="key" value="${a.key}" />
      <button type="submit">
        Buy ${t.tokens.toLocaleString('en')} more tokens for ${formatMoney(t.currency, t.value)}
      </button>
    </form>
  </section>`
}

/** The subscription state, the upgrade path and the top-up shown under a license. */
export function accountSection(a: AccountModel | null): SafeHtml {
  if (!a) return html``
  return html`${a.subscription ? subscriptionState(a.subscription) : ''}${upgradeForm(a)}${topUpForm(a)}`
}

/** The quote for a tier change, then one button to pay it (the amount is recomputed on the server). */
export function upgradeQuotePage(m: { key: string; quote: UpgradeQuote }): string {
  const q = m.quote
  const charge = formatMoney(q.listed_currency, q.proration_charge_value)
  const body = html`<h1>Upgrade to ${q.to_policy_slug}</h1>
    <div class="card">
      <dl>
        <dt>From</dt>
        <dd>${q.from_policy_slug}</dd>
        <dt>To</dt>
        <dd>${q.to_policy_slug}</dd>
        <dt>Due now</dt>
        <dd>${charge}${q.listed_currency !== 'SAT' ? html` (${formatMoney('SAT', q.amount_sats)})` : ''}</dd>
        <dt>Takes effect</dt>
        <dd>${q.effective_at === 'immediate' ? 'when paid' : q.effective_at.slice(0, 10)}</dd>
        ${
          q.next_renewal_value !== null && q.next_renewal_at
            ? html`<dt>Next renewal</dt>
                <dd>${formatMoney(q.listed_currency, q.next_renewal_value)} on ${q.next_renewal_at.slice(0, 10)}</dd>`
            : ''
        }
      </dl>
      <form method="post" action="/buy/upgrade/pay">
        <input type="hidden" name="key" value="${m.key}" />
        <input type="hidden" name="target" value="${q.to_policy_slug}" />
        <button type="submit">Pay ${charge}</button>
      </form>
    </div>
    <p class="muted">Your key stays the same; the new tier applies once the payment confirms.</p>`
  return page('Upgrade', body)
}

/** The tier the form starts on: the buyer's last choice, else the highlighted tier, else the first. */
function preselectedTier(m: BuyPageModel): string | undefined {
  return m.form?.policy ?? m.tiers.find((t) => t.highlighted)?.slug ?? m.tiers[0]?.slug
}

/** "about $4.12" for a sats amount at the cached rate; empty without one. */
function aboutFiat(sats: number, fiat: FiatView | null | undefined): string {
  return fiat ? `about ${formatMoney(fiat.currency, satsToFiat(sats, fiat.centibps, 'down'))}` : ''
}

/** The other unit beside a price: fiat for a sats price (cached rate only), sats for a fiat price. */
function equivalent(
  currency: Currency,
  value: number,
  sats: number | null | undefined,
  fiat?: FiatView | null,
): string {
  if (isSatsCurrency(currency)) return aboutFiat(value, fiat)
  return sats ? `about ${formatMoney('SAT', sats)}` : ''
}

/** Links to show the approximate prices in another cached currency (only when there is a choice). */
function currencyChoice(slug: string, fiat: FiatView | null | undefined): SafeHtml {
  if (!fiat || fiat.choices.length < 2) return html``
  const links = fiat.choices.map(
    (c, i) =>
      html`${i > 0 ? ' · ' : ''}${
        c === fiat.currency ? html`<strong>${c}</strong>` : html`<a href="/buy/${slug}?currency=${c}">${c}</a>`
      }`,
  )
  return html`<p class="muted" id="fiat-choice">Approximate prices in: ${links}</p>`
}

/** The price a previewed code gives the chosen tier: the code, the saving, and what is due instead of what was. */
function previewBox(m: BuyPageModel): SafeHtml {
  const p = m.preview
  if (!p) return html``
  const tierName = m.tiers.find((t) => t.slug === p.policy_slug)?.name ?? p.policy_slug
  const about = equivalent(p.listed_currency, p.listed_value, p.amount_sats, m.fiat)
  return html`<div class="card preview" id="discount-preview" role="status">
    <p>Code <strong>${p.code}</strong> on ${tierName}. You save ${formatMoney(p.listed_currency, p.discount_value)}.</p>
    <p class="price">
      Due now: ${p.free ? 'nothing' : formatMoney(p.listed_currency, p.listed_value)}
      ${about && !p.free ? html`<span class="about">(${about})</span>` : ''}
      <s>${formatMoney(p.listed_currency, p.base_value)}</s>
    </p>
  </div>`
}

function tierCard(t: BuyTier, chosen: string | undefined, fiat: FiatView | null | undefined): SafeHtml {
  const about = equivalent(t.currency, t.value, t.sats, fiat)
  return html`<label class="tier">
    <input type="radio" name="policy" value="${t.slug}" ${t.slug === chosen ? html`checked` : ''} required />
    <strong>${t.name}</strong>${t.highlighted ? html`<span class="badge">Most popular</span>` : ''}
    <div class="price">${priceLine(t)}</div>
    ${about ? html`<div class="about">${about}</div>` : ''} ${t.description ? html`<p>${t.description}</p>` : ''}
    <ul>
      <li>${seats(t.maxMachines)}</li>
      <li>${term(t)}</li>
      ${t.entitlements.map((e) => html`<li>${e}</li>`)}
    </ul>
  </label>`
}

function buyForm(m: BuyPageModel): SafeHtml {
  const chosen = preselectedTier(m)
  // The chosen display currency rides on the form's address, so an error or a preview keeps it.
  const action = m.fiat ? `/buy/${m.product.slug}?currency=${m.fiat.currency}` : `/buy/${m.product.slug}`
  return html`<form method="post" action="${action}">
    <fieldset class="tiers" aria-label="Choose a tier">${m.tiers.map((t) => tierCard(t, chosen, m.fiat))}</fieldset>
    <label class="field" for="buyer_email">Email for your receipt (optional)</label>
    <input type="email" id="buyer_email" name="buyer_email" maxlength="254" value="${m.form?.buyer_email ?? ''}" />
    <label class="field" for="code">Discount code (optional)</label>
    <div class="code-row">
      <input type="text" id="code" name="code" maxlength="64" autocomplete="off" value="${m.form?.code ?? ''}" />
      <button type="submit" class="secondary" name="intent" value="preview" formnovalidate>Apply code</button>
    </div>
    ${previewBox(m)}
    <label class="field" for="buyer_note">Note to the seller (optional)</label>
    <textarea id="buyer_note" name="buyer_note" maxlength="1000">${m.form?.buyer_note ?? ''}</textarea>
    <button type="submit" ${m.priceUnavailable ? html`disabled` : ''}>Continue to payment</button>
  </form>`
}

export function buyPage(m: BuyPageModel): string {
  const body = html`<h1>${m.product.name}</h1>
    ${m.product.description ? html`<p class="lead">${m.product.description}</p>` : ''}
    ${m.error ? html`<p class="error" role="alert">${m.error}</p>` : ''}
    ${m.tiers.length === 0 ? html`<p class="card">This product is not on sale right now.</p>` : buyForm(m)}
    ${currencyChoice(m.product.slug, m.fiat)}
    <p class="muted"><a href="/recover">Lost your key? Recover it here.</a></p>`
  return page(`Buy ${m.product.name}`, body)
}

/** Between the form and the provider: a page that moves on by itself (no script, CSP-friendly). */
export function checkoutRedirectPage(
  checkoutUrl: string,
  invoiceId: string,
  there = 'where your license key appears',
): string {
  const body = html`<h1>Taking you to the payment page…</h1>
    <p><a class="button" href="${checkoutUrl}">Continue to payment</a></p>
    <p class="muted">
      After paying you come back to <a href="/thank-you?invoice=${invoiceId}">your thank-you page</a>, ${there}.
    </p>`
  return page('Checkout', body, { refresh: `0;url=${checkoutUrl}` })
}

export function unknownPurchasePage(given: string): string {
  const body = html`<h1>Purchase not found</h1>
    <p class="error" role="alert">We could not find a purchase with the id “${given}”.</p>
    <p class="muted">
      Check the link you were sent back with, or <a href="/recover">recover a key</a> you already have.
    </p>`
  return page('Purchase not found', body)
}

/** An access license's tokens this period, in the recover page's list. */
function accessRows(a: AccessQuota | null | undefined): SafeHtml | '' {
  if (!a) return ''
  const allowed = a.tokens_per_period === null ? null : a.tokens_per_period + a.top_up_tokens
  const n = (x: number) => x.toLocaleString('en')
  return html`<dt>API tokens</dt>
    <dd id="access-tokens">
      ${allowed === null ? `${n(a.tokens_used)} used, no quota` : `${n(a.tokens_used)} of ${n(allowed)} used, ${n(a.tokens_remaining ?? 0)} left`}
    </dd>
    ${audioRow(a)}
    <dt>Tokens reset</dt>
    <dd>${a.resets_at}</dd>`
}

/** Audio minutes this period, when the tier sells them (or the key used some). */
function audioRow(a: AccessQuota): SafeHtml | '' {
  if (a.audio_minutes_per_period === null && a.audio_seconds_used === 0) return ''
  const min = (s: number) => (s / 60).toLocaleString('en', { maximumFractionDigits: 1 })
  return html`<dt>Audio minutes</dt>
    <dd id="access-audio">
      ${a.audio_minutes_per_period === null ? `${min(a.audio_seconds_used)} used, no quota` : `${min(a.audio_seconds_used)} of ${a.audio_minutes_per_period.toLocaleString('en')} used, ${min(a.audio_seconds_remaining ?? 0)} left`}
    </dd>`
}

export function recoverPage(m: {
  error?: string
  key?: string
  invoice_id?: string
  email?: string
  result?: RecoverResponse
  account?: AccountModel | null
}): string {
  const r = m.result
  const body = html`<h1>Recover your license</h1>
    <p class="lead">
      Paste any copy of your license key, or give the invoice id from your receipt and the e-mail address you paid with,
      to see your license and get a freshly signed key with your current entitlements.
    </p>
    ${m.error ? html`<p class="error" role="alert">${m.error}</p>` : ''}
    ${
      r
        ? html`<div class="card" id="recovered">
              <dl>
                <dt>Product</dt>
                <dd>${r.product_name}</dd>
                ${
                  (r.policy_name ?? r.policy_slug)
                    ? html`<dt>Tier</dt>
                        <dd>${r.policy_name ?? r.policy_slug ?? ''}</dd>`
                    : ''
                }
                <dt>Status</dt>
                <dd>${r.status}</dd>
                <dt>Expires</dt>
                <dd>${r.expires_at ?? 'never'}</dd>
                <dt>Machines</dt>
                <dd>${r.active_machines} of ${r.max_machines === 0 ? 'unlimited' : r.max_machines}</dd>
                <dt>Entitlements</dt>
                <dd>${r.entitlements.length ? r.entitlements.join(', ') : 'none'}</dd>
                ${accessRows(r.access)}
              </dl>
              ${
                r.license_key
                  ? html`<pre id="license-key" class="key">${r.license_key}</pre>
                      <button type="button" data-copy="license-key">Copy key</button>`
                  : html`<p class="muted">This license is revoked; no new key is issued.</p>`
              }
            </div>
            ${accountSection(m.account ?? null)}`
        : ''
    }
    <form method="post" action="/recover" id="recover-by-key" class="card">
      <h2>With a copy of your key</h2>
      <label class="field" for="key">License key</label>
      <textarea id="key" name="key" required maxlength="16384" spellcheck="false">${m.key ?? ''}</textarea>
      <button type="submit">Recover</button>
    </form>
    <form method="post" action="/recover" id="recover-by-invoice" class="card">
      <h2>With your invoice and e-mail</h2>
      <label class="field" for="invoice_id">Invoice id (from your receipt or thank-you page)</label>
      <input
        type="text"
        id="invoice_id"
        name="invoice_id"
        required
        maxlength="64"
        autocomplete="off"
        spellcheck="false"
        value="${m.invoice_id ?? ''}"
      />
      <label class="field" for="email">E-mail address you paid with</label>
      <input type="email" id="email" name="email" required maxlength="254" value="${m.email ?? ''}" />
      <button type="submit">Recover</button>
    </form>`
  return page('Recover your license', body, { script: true })
}

/** A product address that leads nowhere: say so, and where to go instead. */
export function productNotFoundPage(): string {
  return page(
    'No such product',
    html`<h1>No such product</h1>
      <p>Nothing is on sale at this address. Check the link you were given: it may be old or mistyped.</p>
      <p><a href="/recover">Already bought? Find your license key</a></p>`,
  )
}

export function errorPage(title: string, message: string): string {
  return page(
    title,
    html`<h1>${title}</h1>
      <p class="error" role="alert">${message}</p>`,
  )
}
