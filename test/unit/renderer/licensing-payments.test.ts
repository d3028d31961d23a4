// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import type { BackendApi } from '../../../src-renderer/api'
import { button, flush, mountWith, unmountAll } from './mount'
import ProvidersPanel from '../../../src-renderer/components/licensing/ProvidersPanel.vue'

const view = (over: Record<string, unknown>) => ({
  connected: false,
  active: false,
  base_url: null,
  connected_at: 1,
  webhook_url: 'http://h:9999/v1/x/webhook',
  state: 'disconnected',
  open_invoices: 0,
  webhook_id: null,
  ...over,
})

const settling = (forgotten: boolean) => ({
  active: 'zaprite',
  flagged_invoices: 1,
  btcpay: {
    ...view(forgotten ? {} : { state: 'settling', open_invoices: 3, base_url: 'https://pay.example' }),
    store_id: 'S1',
    has_webhook_secret: true,
  },
  zaprite: view({ connected: true, active: true, state: 'active' }),
})

const flagged = {
  items: [
    {
      id: 'inv-underpaid-1',
      provider: 'btcpay',
      status: 'pending',
      payment_flag: 'underpaid',
      payment_flag_detail: 'paid 0.00009000 BTC, expected 0.00010000 BTC',
      flagged_at: 5,
    },
    {
      id: 'inv-late-1',
      provider: 'btcpay',
      status: 'settled',
      payment_flag: 'paid_late',
      payment_flag_detail: 'the payment arrived after the invoice expired',
      flagged_at: 6,
    },
    {
      id: 'inv-status-only-1',
      provider: 'zaprite',
      status: 'settled',
      payment_flag: 'amount_unverified',
      payment_flag_detail: 'settled on PAID alone: the record names no amount, expected 0.00010000 BTC',
      flagged_at: 7,
    },
  ],
  total: 3,
}

function fakeApi(calls: { method: string; input: unknown }[]): BackendApi {
  return {
    transport: 'http',
    call: (async (method: string, input: unknown) => {
      calls.push({ method, input })
      if (method === 'licAdminInvoices') return flagged
      if (method === 'licAdminForgetProvider') return settling(true)
      return settling(false)
    }) as BackendApi['call'],
    subscribe: () => () => undefined,
  }
}

afterEach(unmountAll)

describe('payment provider panel: settling and flagged payments', () => {
  it('shows "settling N open invoices" and forgets early only after confirming', async () => {
    const calls: { method: string; input: unknown }[] = []
    const el = await mountWith(ProvidersPanel, fakeApi(calls))
    expect(el.querySelector('[data-testid="provider-settling"]')?.textContent).toContain('settling 3 open invoice(s)')

    const forget = button(el, 'Forget now')
    forget.click()
    await flush()
    expect(calls.map((c) => c.method)).not.toContain('licAdminForgetProvider')
    const confirm = button(el, 'Confirm')
    confirm.click()
    await flush()
    expect(calls.find((c) => c.method === 'licAdminForgetProvider')?.input).toEqual({
      provider: 'btcpay',
      confirm: true,
    })
    expect(el.querySelector('[data-testid="provider-settling"]')).toBeNull()
  })

  it('lists flagged payments with both amounts when the status counts any', async () => {
    const calls: { method: string; input: unknown }[] = []
    const el = await mountWith(ProvidersPanel, fakeApi(calls))
    expect(calls.find((c) => c.method === 'licAdminInvoices')?.input).toMatchObject({ flagged: true })
    const table = el.querySelector('[data-testid="flagged-invoices"]')!
    expect(table.textContent).toContain('Underpaid — not settled')
    expect(table.textContent).toContain('paid 0.00009000 BTC, expected 0.00010000 BTC')
    expect(table.textContent).toContain('Paid after expiry — settled')
    expect(table.textContent).toContain('Amount not reported — settled on status')
  })

  it('offers "Connect to BTCPay" by authorization', async () => {
    const calls: { method: string; input: unknown }[] = []
    const el = await mountWith(ProvidersPanel, fakeApi(calls))
    expect(el.querySelector('[data-testid="btcpay-authorize"]')?.textContent).toContain('Connect to BTCPay')
  })
})
