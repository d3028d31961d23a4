import type { FakeBtcpay } from './btcpay'
import type { FakeReply, RecordedRequest } from './loopback'

/**
 * The fake BTCPay Server's checkout page (`/i/<invoice>`), so a person in the demo can finish a
 * purchase: "Pay" settles the invoice and "Expire" lets it lapse, each sending the fake's real
 * signed webhook to Tandem, then returning the buyer to the invoice's redirect (the thank-you page).
 */

const esc = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1b1f24}
main{max-width:440px;margin:48px auto;background:#fff;border:1px solid #d8dce1;border-radius:12px;padding:24px}
h1{font-size:1.3rem;margin:0 0 4px}.amount{font-size:1.6rem;font-weight:700;margin:12px 0}
.muted{color:#5b6470;font-size:.9rem}form{display:inline}button{font:inherit;font-weight:600;border:0;border-radius:8px;
padding:10px 20px;margin:16px 8px 0 0;cursor:pointer}.pay{background:#51b13e;color:#fff}.expire{background:#e4e7eb;color:#1b1f24}
.state{padding:8px 12px;border-radius:8px;background:#eef6ec}.error{background:#fdecea;color:#b42318}`

function page(title: string, body: string): FakeReply {
  return {
    status: 200,
    body: `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,"><title>${esc(title)}</title><style>${STYLE}</style></head><body><main>${body}</main></body></html>`,
  }
}

export async function checkoutPage(fake: FakeBtcpay, req: RecordedRequest, url: URL): Promise<FakeReply> {
  const m = url.pathname.match(/^\/i\/([A-Za-z0-9]+)(?:\/(pay|expire))?$/)
  const inv = m ? fake.invoices.get(m[1]!) : undefined
  if (!m || !inv) return { status: 404, body: '' }
  const action = m[2]
  const self = `/i/${inv.id}`
  if (action && req.method === 'POST') {
    if (inv.status !== 'New') return { status: 303, body: '', headers: { location: self } }
    let delivered: { status: number; text: string }
    try {
      delivered = action === 'pay' ? await fake.pay(inv.id) : await expire(fake, inv.id)
    } catch (err) {
      return page('Webhook failed', `<p class="state error">Could not reach the shop: ${esc(String(err))}</p>`)
    }
    if (delivered.status >= 300)
      return page('Webhook refused', `<p class="state error">The shop answered ${delivered.status} to the webhook.</p>`)
    return { status: 303, body: '', headers: { location: inv.redirectURL ?? self } }
  }
  if (req.method !== 'GET') return { status: 405, body: '' }
  const product = typeof inv.metadata.itemDesc === 'string' ? inv.metadata.itemDesc : 'Your order'
  const actions =
    inv.status === 'New'
      ? `<form method="post" action="${self}/pay"><button class="pay" type="submit">Pay</button></form>
         <form method="post" action="${self}/expire"><button class="expire" type="submit">Expire</button></form>
         <p class="muted">Demo store: "Pay" settles this invoice and "Expire" lets it lapse. Either sends the signed webhook a real BTCPay Server would.</p>`
      : `<p class="state">This invoice is ${esc(inv.status.toLowerCase())}.</p>${
          inv.redirectURL ? `<p><a href="${esc(inv.redirectURL)}">Return to the shop</a></p>` : ''
        }`
  return page(
    `Pay invoice ${inv.id}`,
    `<h1>${esc(product)}</h1><p class="muted">Invoice ${esc(inv.id)} · Fake BTCPay Server</p>
     <p class="amount">${esc(inv.amount)} ${esc(inv.currency)}</p>${actions}`,
  )
}

async function expire(fake: FakeBtcpay, id: string): Promise<{ status: number; text: string }> {
  fake.setStatus(id, 'Expired')
  return fake.sendEvent('InvoiceExpired', id)
}
