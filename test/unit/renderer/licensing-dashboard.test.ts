// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import type { BackendApi } from '../../../src-renderer/api'
import { button, flush, mountWith, unmountAll } from './mount'
import ProvidersPanel from '../../../src-renderer/components/licensing/ProvidersPanel.vue'
import { money, moneyInput, parseMoney } from '../../../src-renderer/components/licensing/format'

const status = (active: 'btcpay' | 'zaprite' | null) => ({
  active,
  btcpay: {
    connected: active === 'btcpay',
    active: active === 'btcpay',
    base_url: active === 'btcpay' ? 'https://pay.example' : null,
    connected_at: 1,
    webhook_url: 'http://h:9999/v1/btcpay/webhook',
    store_id: 'S1',
    has_webhook_secret: true,
  },
  zaprite: {
    connected: false,
    active: false,
    base_url: null,
    connected_at: null,
    webhook_url: 'http://h:9999/v1/zaprite/webhook',
  },
})

function fakeApi(calls: string[]): BackendApi {
  return {
    transport: 'http',
    call: (async (method: string) => {
      calls.push(method)
      if (method === 'licAdminBtcpayDisconnect') return status(null)
      return status('btcpay')
    }) as BackendApi['call'],
    subscribe: () => () => undefined,
  }
}

afterEach(unmountAll)

describe('licensing dashboard', () => {
  it('asks before disconnecting a provider, then shows the empty state', async () => {
    const calls: string[] = []
    const el = await mountWith(ProvidersPanel, fakeApi(calls))
    expect(calls).toEqual(['licAdminProviders'])
    expect(el.textContent).toContain('https://pay.example')

    const disconnect = button(el, 'Disconnect')
    disconnect.click()
    await flush()
    expect(calls).not.toContain('licAdminBtcpayDisconnect')
    expect(el.querySelector('[role="alertdialog"]')?.textContent).toContain('Disconnect BTCPay?')

    const confirm = button(el, 'Confirm')
    confirm.click()
    await flush()
    expect(calls).toContain('licAdminBtcpayDisconnect')
    expect(el.textContent).toContain('No payment provider is active.')
  })

  it('parses and formats amounts in the smallest unit', () => {
    expect(parseMoney('USD', '19.99')).toBe(1999)
    expect(parseMoney('EUR', '5')).toBe(500)
    expect(parseMoney('BTC', '0.00012345')).toBe(12_345)
    expect(parseMoney('SAT', '50,000')).toBe(50_000)
    expect(parseMoney('USD', '1.999')).toBeNull()
    expect(parseMoney('SAT', '1.5')).toBeNull()
    expect(money('USD', 1999)).toBe('$19.99')
    expect(money('SAT', null)).toBe('—')
    expect(moneyInput('BTC', 12_345)).toBe('0.00012345')
  })
})
