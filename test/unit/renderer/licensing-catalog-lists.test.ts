// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import type { Component } from 'vue'
import type { BackendApi } from '../../../src-renderer/api'
import DiscountsPanel from '../../../src-renderer/components/licensing/DiscountsPanel.vue'
import ProductsPanel from '../../../src-renderer/components/licensing/ProductsPanel.vue'
import WebhooksPanel from '../../../src-renderer/components/licensing/WebhooksPanel.vue'
import { button, flush, mountWith, unmountAll } from './mount'

/** Products, discount codes and webhook endpoints: one page at a time from the server, sorted and searched there. */
type Call = { method: string; input: Record<string, unknown> }
const TOTAL = 120

const product = (i: number) => ({
  id: `p${i}`,
  slug: `app-${i}`,
  name: `App ${i}`,
  description: '',
  price_currency: 'SAT',
  price_value: 1000,
  price_sats: 1000,
  entitlements_catalog: [],
  active: true,
  return_url_prefix: null,
  created_at: i,
  updated_at: i,
})
const discount = (i: number) => ({
  id: `d${i}`,
  code: `CODE-${i}`,
  kind: 'percent',
  value: 10,
  discount_currency: 'SAT',
  product_id: null,
  policy_id: null,
  max_redemptions: null,
  redemption_count: 0,
  pending_count: 0,
  over_cap_by: 0,
  over_cap_invoices: [],
  expires_at: null,
  active: true,
  note: '',
  created_at: i,
  updated_at: i,
})
const endpoint = (i: number) => ({
  id: `e${i}`,
  url: `https://h${i}.example.test/hook`,
  events: ['*'],
  description: '',
  active: true,
  created_at: i,
  updated_at: i,
  pending: 0,
  failed: 0,
})

const page = <T>(input: Record<string, unknown>, row: (i: number) => T): T[] => {
  const offset = (input.offset as number | undefined) ?? 0 // the server's default
  return Array.from({ length: Math.min(input.limit as number, TOTAL - offset) }, (_, i) => row(offset + i))
}

function fakeApi(calls: Call[]): BackendApi {
  return {
    transport: 'http',
    call: (async (method: string, input: Record<string, unknown>) => {
      calls.push({ method, input })
      if (method === 'licAdminProducts') return { total: TOTAL, products: page(input, product) }
      if (method === 'licAdminDiscounts') return { total: TOTAL, discounts: page(input, discount) }
      if (method === 'licAdminWebhookEndpoints') return { total: TOTAL, endpoints: page(input, endpoint) }
      if (method === 'licAdminWebhookDeliveries') return []
      throw new Error(`unexpected ${method}`)
    }) as BackendApi['call'],
    subscribe: () => () => undefined,
  }
}

const panels: { name: string; panel: Component; method: string; search: string; column: string; sort: string }[] = [
  {
    name: 'Products',
    panel: ProductsPanel,
    method: 'licAdminProducts',
    search: 'Search products',
    column: 'Name',
    sort: 'name',
  },
  {
    name: 'Discounts',
    panel: DiscountsPanel,
    method: 'licAdminDiscounts',
    search: 'Search discount codes',
    column: 'Code',
    sort: 'code',
  },
  {
    name: 'Webhooks',
    panel: WebhooksPanel,
    method: 'licAdminWebhookEndpoints',
    search: 'Search endpoints',
    column: 'URL',
    sort: 'url',
  },
]

afterEach(unmountAll)

describe.each(panels)('$name tab', ({ panel, method, search, column, sort }) => {
  // The list's own calls: a product picker elsewhere on the tab asks for names, not a page.
  const listCalls = (calls: Call[]) => calls.filter((c) => c.method === method && c.input.limit !== 500)

  it('asks the server for one page, newest first, and pages with Next', async () => {
    const calls: Call[] = []
    const el = await mountWith(panel, fakeApi(calls))
    expect(listCalls(calls).at(-1)?.input).toMatchObject({ sort: 'created_at', order: 'desc', limit: 50, offset: 0 })
    expect(el.textContent).toContain('1–50 of 120')
    button(el, 'Next').click()
    await flush()
    expect(listCalls(calls).at(-1)?.input).toMatchObject({ offset: 50 })
    expect(el.textContent).toContain('51–100 of 120')
  })

  it('sorts by a column header and searches as you type, from the first page', async () => {
    const calls: Call[] = []
    const el = await mountWith(panel, fakeApi(calls))
    button(el, new RegExp(`^${column}`)).click()
    await flush()
    expect(listCalls(calls).at(-1)?.input).toMatchObject({ sort, order: 'desc', offset: 0 })
    button(el, 'Next').click()
    await flush()
    const input = el.querySelector(`input[aria-label="${search}"]`) as HTMLInputElement
    input.value = 'spring'
    input.dispatchEvent(new Event('input'))
    await new Promise((r) => setTimeout(r, 400))
    await flush()
    expect(listCalls(calls).at(-1)?.input).toMatchObject({ q: 'spring', sort, offset: 0 })
  })
})

describe('product pickers', () => {
  it('ask for product names in a bounded list, not an unbounded one', async () => {
    const calls: Call[] = []
    await mountWith(DiscountsPanel, fakeApi(calls))
    const picker = calls.filter((c) => c.method === 'licAdminProducts')
    expect(picker.map((c) => c.input)).toEqual([{ sort: 'name', order: 'asc', limit: 500 }])
  })
})

describe('webhook delivery log', () => {
  it('filters by any endpoint, not only those on the page or search shown above it', async () => {
    const calls: Call[] = []
    const el = await mountWith(WebhooksPanel, fakeApi(calls))
    const options = () =>
      [...(el.querySelector('select[aria-label="Endpoint"]') as HTMLSelectElement).options].map((o) => o.value)
    expect(options()).toHaveLength(1 + TOTAL)
    const input = el.querySelector('input[aria-label="Search endpoints"]') as HTMLInputElement
    input.value = 'h7.'
    input.dispatchEvent(new Event('input'))
    await new Promise((r) => setTimeout(r, 400))
    await flush()
    expect(options()).toHaveLength(1 + TOTAL)
    const pickers = calls.filter((c) => c.method === 'licAdminWebhookEndpoints' && c.input.limit === 500)
    expect(pickers.map((c) => c.input)).toEqual([{ sort: 'url', order: 'asc', limit: 500 }])
  })
})
