// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import { defineComponent, h, reactive } from 'vue'
import type { BackendApi } from '../../../src-renderer/api'
import DiscountOverCap from '../../../src-renderer/components/licensing/DiscountOverCap.vue'
import ProductPriceEffect from '../../../src-renderer/components/licensing/ProductPriceEffect.vue'
import { flush, mountWith, unmountAll } from './mount'

type Call = { method: string; input: Record<string, unknown> }

function fakeApi(calls: Call[]): BackendApi {
  return {
    transport: 'http',
    call: (async (method: string, input: Record<string, unknown>) => {
      calls.push({ method, input })
      if (method === 'licAdminProductPriceEffect') {
        return [
          {
            policy_id: 'p1',
            slug: 'pro',
            name: 'Pro <b>tier</b>',
            before: { currency: 'SAT', value: 5000 },
            after: { currency: 'SAT', value: 5000 },
            pinned: true,
            changed: false,
          },
          {
            policy_id: 'p2',
            slug: 'default',
            name: 'Standard',
            before: { currency: 'SAT', value: 10_000 },
            after: { currency: input.price_currency, value: input.price_value },
            pinned: false,
            changed: true,
          },
          {
            policy_id: 'p3',
            slug: 'eur',
            name: 'Euro',
            before: { currency: 'EUR', value: 900 },
            after: { currency: 'EUR', value: 900 },
            pinned: false,
            changed: false,
          },
        ]
      }
      throw new Error(`unexpected ${method}`)
    }) as BackendApi['call'],
    subscribe: () => () => undefined,
  }
}

afterEach(unmountAll)

describe('currency change preview', () => {
  it('shows nothing until the price changes, then each affected tier before saving', async () => {
    const calls: Call[] = []
    const state = reactive({ currency: 'SAT' as 'SAT' | 'USD', price: '10000' })
    const Host = defineComponent({
      setup: () => () =>
        h(ProductPriceEffect, {
          productId: 'prod-1',
          savedCurrency: 'SAT',
          savedValue: 10_000,
          currency: state.currency,
          price: state.price,
        }),
    })
    const el = await mountWith(Host, fakeApi(calls))
    expect(calls).toHaveLength(0)
    expect(el.querySelector('[data-testid="price-effect"]')).toBeNull()

    state.currency = 'USD'
    state.price = '19.99'
    await flush()
    expect(calls.at(-1)).toEqual({
      method: 'licAdminProductPriceEffect',
      input: { id: 'prod-1', price_currency: 'USD', price_value: 1999 },
    })
    const box = el.querySelector('[data-testid="price-effect"]')!
    const items = [...box.querySelectorAll('li')].map((li) => li.textContent?.replace(/\s+/g, ' ').trim())
    expect(items).toHaveLength(2)
    expect(items[0]).toContain('Pro <b>tier</b>')
    expect(items[0]).toContain('keeps its own SAT price')
    expect(items[1]).toContain('Standard')
    expect(items[1]).toContain('$19.99')
    expect(box.querySelector('b')).toBeNull()
  })
})

describe('over-cap codes', () => {
  const code = (over: number, invoices: string[]) => ({
    id: 'c1',
    code: 'LAUNCH',
    kind: 'percent' as const,
    value: 50,
    discount_currency: 'SAT' as const,
    product_id: null,
    policy_id: null,
    max_redemptions: 1,
    redemption_count: 1 + over,
    pending_count: 0,
    over_cap_by: over,
    over_cap_invoices: invoices,
    expires_at: null,
    active: true,
    note: '',
    created_at: 0,
    updated_at: 0,
  })

  it('shows "over cap by N" with the invoices, and nothing for a code within its cap', async () => {
    const over = await mountWith(DiscountOverCap, fakeApi([]), {
      discount: code(2, ['aaaaaaaa-1111-4111-8111-111111111111', 'bbbbbbbb-2222']),
    })
    expect(over.textContent).toContain('over cap by 2')
    expect(over.querySelectorAll('li')).toHaveLength(2)
    expect(over.querySelector('li')?.getAttribute('title')).toBe('aaaaaaaa-1111-4111-8111-111111111111')
    const within = await mountWith(DiscountOverCap, fakeApi([]), { discount: code(0, []) })
    expect(within.querySelector('[data-testid="over-cap"]')).toBeNull()
  })
})
