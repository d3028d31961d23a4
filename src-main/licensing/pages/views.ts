import type { PurchaseStatus, RecoverResponse } from '../../contract/licensing'
import { formatMoney } from '../../contract/money'
import { html, page, type SafeHtml } from './html'

export interface BuyTier {
  slug: string
  name: string
  description: string
  currency: string
  value: number
  entitlements: string[]
  maxMachines: number
  durationDays: number
  isRecurring: boolean
  renewalPeriodDays: number
  trialDays: number
  highlighted: boolean
}

export interface BuyPageModel {
  product: { slug: string; name: string; description: string }
  tiers: BuyTier[]
  /** What the buyer typed, shown again after an error. */
  form?: { policy?: string; buyer_email?: string; code?: string; buyer_note?: string }
  error?: string
}

function seats(n: number): string {
  return n === 0 ? 'unlimited machines' : n === 1 ? '1 machine' : `${n} machines`
}

function term(t: BuyTier): string {
  if (t.isRecurring)
    return `renews every ${t.renewalPeriodDays} days${t.trialDays > 0 ? `, ${t.trialDays}-day free trial` : ''}`
  return t.durationDays > 0 ? `${t.durationDays} days` : 'perpetual'
}

export function buyPage(m: BuyPageModel): string {
  const chosen = m.form?.policy ?? m.tiers.find((t) => t.highlighted)?.slug ?? m.tiers[0]?.slug
  const tiers: SafeHtml[] = m.tiers.map(
    (t) =>
      html`<label class="tier">
        <input type="radio" name="policy" value="${t.slug}" ${t.slug === chosen ? html`checked` : ''} required />
        <strong>${t.name}</strong>${t.highlighted ? html`<span class="badge">Most popular</span>` : ''}
        <div class="price">${formatMoney(t.currency, t.value)}</div>
        ${t.description ? html`<p>${t.description}</p>` : ''}
        <ul>
          <li>${seats(t.maxMachines)}</li>
          <li>${term(t)}</li>
          ${t.entitlements.map((e) => html`<li>${e}</li>`)}
        </ul>
      </label>`,
  )
  const body = html`<h1>${m.product.name}</h1>
    ${m.product.description ? html`<p class="lead">${m.product.description}</p>` : ''}
    ${m.error ? html`<p class="error" role="alert">${m.error}</p>` : ''}
    ${
      m.tiers.length === 0
        ? html`<p class="card">This product is not on sale right now.</p>`
        : html`<form method="post" action="/buy/${m.product.slug}">
            <fieldset class="tiers" aria-label="Choose a tier">${tiers}</fieldset>
            <label class="field" for="buyer_email">Email for your receipt (optional)</label>
            <input
              type="email"
              id="buyer_email"
              name="buyer_email"
              maxlength="254"
              value="${m.form?.buyer_email ?? ''}"
            />
            <label class="field" for="code">Discount code (optional)</label>
            <input type="text" id="code" name="code" maxlength="64" autocomplete="off" value="${m.form?.code ?? ''}" />
            <label class="field" for="buyer_note">Note to the seller (optional)</label>
            <textarea id="buyer_note" name="buyer_note" maxlength="1000">${m.form?.buyer_note ?? ''}</textarea>
            <button type="submit">Continue to payment</button>
          </form>`
    }
    <p class="muted"><a href="/recover">Lost your key? Recover it here.</a></p>`
  return page(`Buy ${m.product.name}`, body)
}

/** Between the form and the provider: a page that moves on by itself (no script, CSP-friendly). */
export function checkoutRedirectPage(checkoutUrl: string, invoiceId: string): string {
  const body = html`<h1>Taking you to the payment page…</h1>
    <p><a class="button" href="${checkoutUrl}">Continue to payment</a></p>
    <p class="muted">
      After paying you come back to <a href="/thank-you?invoice=${invoiceId}">your thank-you page</a>, where your
      license key appears.
    </p>`
  return page('Checkout', body, { refresh: `0;url=${checkoutUrl}` })
}

export function thankYouPage(
  p: PurchaseStatus & { product_name: string | null; buyer_email: string | null; buyer_note: string | null },
): string {
  const status =
    p.status === 'settled'
      ? 'Paid. Here is your license key:'
      : p.status === 'pending'
        ? 'Waiting for your payment to confirm… this page updates by itself.'
        : p.status === 'expired'
          ? 'This invoice expired before it was paid.'
          : 'This invoice is no longer valid.'
  const body = html`<h1>Thank you${p.product_name ? html` for buying ${p.product_name}` : ''}</h1>
    <div id="purchase" class="card" data-invoice="${p.invoice_id}" data-status="${p.status}">
      <p id="status" role="status" aria-live="polite">${status}</p>
      <pre id="license-key" class="key" ${p.license_key ? '' : html`hidden`}>${p.license_key ?? ''}</pre>
      <button type="button" id="copy" data-copy="license-key" ${p.license_key ? '' : html`hidden`}>Copy key</button>
      ${p.status === 'pending' && p.checkout_url ? html`<p><a href="${p.checkout_url}">Back to the payment page</a></p>` : ''}
      ${p.status === 'pending' ? html`<noscript><p>Reload this page to see your key once the payment confirms.</p></noscript>` : ''}
    </div>
    <dl>
      <dt>Invoice</dt>
      <dd>${p.invoice_id}</dd>
      <dt>Amount</dt>
      <dd>
        ${formatMoney(p.listed_currency, p.listed_value)}${p.listed_currency !== 'SAT' ? html` (${formatMoney('SAT', p.amount_sats)})` : ''}
      </dd>
      ${
        p.buyer_email
          ? html`<dt>Receipt to</dt>
              <dd>${p.buyer_email}</dd>`
          : ''
      }
      ${
        p.buyer_note
          ? html`<dt>Your note</dt>
              <dd>${p.buyer_note}</dd>`
          : ''
      }
    </dl>
    <p class="muted">
      Keep your key somewhere safe. If you lose it, <a href="/recover">recover it with any copy of it</a>.
    </p>`
  return page('Thank you', body, { script: true })
}

export function unknownPurchasePage(given: string): string {
  const body = html`<h1>Purchase not found</h1>
    <p class="error" role="alert">We could not find a purchase with the id “${given}”.</p>
    <p class="muted">
      Check the link you were sent back with, or <a href="/recover">recover a key</a> you already have.
    </p>`
  return page('Purchase not found', body)
}

export function recoverPage(m: { error?: string; key?: string; result?: RecoverResponse }): string {
  const r = m.result
  const body = html`<h1>Recover your license</h1>
    <p class="lead">
      Paste any copy of your license key to see its current state and get a freshly signed key with your current
      entitlements.
    </p>
    ${m.error ? html`<p class="error" role="alert">${m.error}</p>` : ''}
    ${
      r
        ? html`<div class="card">
            <dl>
              <dt>Product</dt>
              <dd>${r.product_slug}</dd>
              ${
                r.policy_slug
                  ? html`<dt>Tier</dt>
                      <dd>${r.policy_slug}</dd>`
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
            </dl>
            ${
              r.license_key
                ? html`<pre id="license-key" class="key">${r.license_key}</pre>
                    <button type="button" data-copy="license-key">Copy key</button>`
                : html`<p class="muted">This license is revoked; no new key is issued.</p>`
            }
          </div>`
        : ''
    }
    <form method="post" action="/recover">
      <label class="field" for="key">License key</label>
      <textarea id="key" name="key" required maxlength="16384" spellcheck="false">${m.key ?? ''}</textarea>
      <button type="submit">Recover</button>
    </form>`
  return page('Recover your license', body, { script: true })
}

export function errorPage(title: string, message: string): string {
  return page(
    title,
    html`<h1>${title}</h1>
      <p class="error" role="alert">${message}</p>`,
  )
}
