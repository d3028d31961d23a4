import type { PurchaseStatus } from '../../contract/licensing'
import type { KeyReveal } from '../gatewayAccess'
import { formatMoney } from '../../../src-shared/money'
import { html, page, type SafeHtml } from './html'
import { accountSection, type AccountModel } from './views'

/** The poll answer and what the page shows beside it. */
export type ThankYouModel = PurchaseStatus & {
  product_name: string | null
  buyer_email: string | null
  buyer_note: string | null
  /** The invoice's kind: purchase, redeem, renewal, upgrade or top_up. */
  kind: string | null
  /** A top-up invoice's tokens; null for any other invoice. */
  top_up_tokens?: number | null
}

/**
 * Where the buyer stands: waiting to pay; paid with the license being issued; issued (the key);
 * paid with no key to show (a tier change or renewal, or a license since suspended or revoked);
 * closed (expired or invalid, nothing issued).
 */
export type ThankYouState = 'waiting' | 'issuing' | 'issued' | 'paid' | 'closed'

export function thankYouState(p: ThankYouModel): ThankYouState {
  if (p.status === 'pending') return 'waiting'
  if (p.status !== 'settled') return 'closed'
  if (p.license_key) return 'issued'
  // Only a purchase or redemption issues a license of its own; settling writes it in the same transaction.
  const issuesLicense = p.kind === 'purchase' || p.kind === 'redeem' || p.kind === null
  return issuesLicense && !p.license_id ? 'issuing' : 'paid'
}

function details(p: ThankYouModel): SafeHtml {
  return html`<dl>
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
  </dl>`
}

/** The status box the script watches: it polls while the invoice is pending or its license is being issued. */
function statusBox(p: ThankYouModel, state: ThankYouState, text: string, inner: SafeHtml | string = ''): SafeHtml {
  return html`<div
    id="purchase"
    class="card"
    data-invoice="${p.invoice_id}"
    data-status="${p.status}"
    data-license="${p.license_id ? '1' : ''}"
    data-state="${state}"
  >
    <p id="status" role="status" aria-live="polite">${text}</p>
    ${inner}
  </div>`
}

function waiting(p: ThankYouModel): SafeHtml {
  const pay = p.checkout_url ? html`<p id="pay-link"><a href="${p.checkout_url}">Back to the payment page</a></p>` : ''
  return html`<h1>Waiting for your payment</h1>
    ${statusBox(
      p,
      'waiting',
      'We have not seen your payment confirm yet. This page checks by itself every few seconds.',
      html`${pay}<noscript><p>Reload this page to check again.</p></noscript>`,
    )}
    ${details(p)}`
}

function issuing(p: ThankYouModel): SafeHtml {
  return html`<h1>Payment received</h1>
    ${statusBox(
      p,
      'issuing',
      'Your payment is confirmed and your license is being issued. This page updates by itself.',
      html`<noscript><p>Reload this page in a moment.</p></noscript>`,
    )}
    ${details(p)}`
}

function paid(p: ThankYouModel): SafeHtml {
  const text =
    p.kind === 'top_up'
      ? `Your payment is confirmed: ${(p.top_up_tokens ?? 0).toLocaleString('en')} tokens were added to this period of your license. They work now; your keys stay the same.`
      : p.kind === 'upgrade' || p.kind === 'renewal'
        ? 'Your payment is confirmed. It applies to the license you already hold: your key stays the same.'
        : 'Your payment is confirmed, but the license from this purchase is not active now. Please contact the seller.'
  return html`<h1>Payment received</h1>
    ${statusBox(p, 'paid', text)} ${details(p)}
    <p class="muted"><a href="/recover">See your license's current state</a>.</p>`
}

const NEW_GATEWAY_KEY = html`To get a new one (the old one then stops working), send your license key to
  <code>POST /v1/gateway-key</code> as <code>{"license_key": "…"}</code>.`

/** The buyer's gateway key for the cluster's API: shown on this page once, then only said to have been. */
function gatewaySection(g: KeyReveal | null): SafeHtml | string {
  if (g === null) return ''
  if (g.kind === 'secret')
    return html`<div id="gateway" class="card">
      <p>
        Your gateway key for the cluster's API. It is shown this once: copy it now and keep it with your license key.
      </p>
      <pre id="gateway-key" class="key">${g.secret}</pre>
      <button type="button" id="copy-gateway" data-copy="gateway-key">Copy key</button>
      <p class="muted">${NEW_GATEWAY_KEY}</p>
    </div>`
  if (g.kind === 'shown')
    return html`<div id="gateway" class="card">
      <p>Your gateway key was handed out on ${new Date(g.at).toISOString()} and is not shown again.</p>
      <p class="muted">${NEW_GATEWAY_KEY}</p>
    </div>`
  return html`<div id="gateway" class="card">
    <p>Your gateway key could not be prepared just now. Reload this page in a moment.</p>
    <p class="muted">${NEW_GATEWAY_KEY}</p>
  </div>`
}

function issued(p: ThankYouModel, account: AccountModel | null, gateway: KeyReveal | null): SafeHtml {
  return html`<h1>Thank you${p.product_name ? html` for buying ${p.product_name}` : ''}</h1>
    ${statusBox(
      p,
      'issued',
      'Paid. Here is your license key:',
      html`<pre id="license-key" class="key">${p.license_key}</pre>
        <button type="button" id="copy" data-copy="license-key">Copy key</button>`,
    )}
    ${gatewaySection(gateway)} ${details(p)} ${accountSection(account)}
    <p class="muted">
      Keep your key somewhere safe. If you lose it, <a href="/recover">recover it</a> with any copy of it, or with this
      invoice id and your e-mail address.
    </p>`
}

/** Expired or invalid: nothing was issued; the way back is the product's buy page. */
function closed(p: ThankYouModel): SafeHtml {
  const expired = p.status === 'expired'
  const buyAgain = p.product_slug
    ? html`<p>
        <a class="button" id="buy-again" href="/buy/${p.product_slug}">Back to ${p.product_name ?? 'the shop'}</a>
      </p>`
    : ''
  return html`<h1>${expired ? 'This invoice expired' : 'This invoice is no longer valid'}</h1>
    ${statusBox(
      p,
      'closed',
      expired
        ? 'This invoice expired before it was paid. Nothing was issued; you can start a new purchase.'
        : 'The payment provider closed this invoice without a valid payment. You can start a new purchase.',
      buyAgain,
    )}
    ${details(p)}
    <p class="muted">If you paid it anyway, the seller still counts a late payment: come back to this page later.</p>`
}

const TITLES: Record<ThankYouState, string> = {
  waiting: 'Waiting for your payment',
  issuing: 'Payment received',
  issued: 'Thank you',
  paid: 'Payment received',
  closed: 'Invoice closed',
}

/** The page a buyer returns to after checkout, worded for where the purchase stands. */
export function thankYouPage(
  p: ThankYouModel,
  account: AccountModel | null = null,
  gateway: KeyReveal | null = null,
): string {
  const state = thankYouState(p)
  const body =
    state === 'waiting'
      ? waiting(p)
      : state === 'issuing'
        ? issuing(p)
        : state === 'issued'
          ? issued(p, account, gateway)
          : state === 'paid'
            ? paid(p)
            : closed(p)
  // The script polls while something is still to come, and binds the copy button once the key is shown.
  const live = state === 'waiting' || state === 'issuing' || state === 'issued'
  return page(TITLES[state], body, { script: live })
}
