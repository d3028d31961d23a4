// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import type { BackendApi } from '../../../src-renderer/api'
import ProductsPanel from '../../../src-renderer/components/licensing/ProductsPanel.vue'
import { monthlyTier } from './fixtures'
import { button, flush, mountWith, unmountAll } from './mount'

/** The tier editor sets an access tier's top-up pack (issue 45), and only on a tier with a token quota. */
const product = {
  id: 'prod-1',
  slug: 'api',
  name: 'Cluster',
  description: '',
  price_currency: 'USD',
  price_value: 900,
  active: true,
}
const ACCESS = { models: null, tokens_per_period: 2000, requests_per_minute: 30, concurrent_streams: 2, top_up: null }
const tier = (access: typeof ACCESS | null) => monthlyTier({ access })

function api(access: typeof ACCESS | null, calls: { method: string; input: unknown }[]): BackendApi {
  return {
    transport: 'http',
    call: (async (method: string, input: unknown) => {
      calls.push({ method, input })
      if (method === 'licAdminProducts') return { total: 1, products: [product] }
      if (method === 'licAdminPolicies') return [tier(access)]
      if (method === 'licAdminUpdatePolicy') return tier(access)
      throw new Error(`unexpected ${method}`)
    }) as BackendApi['call'],
    subscribe: () => () => undefined,
  }
}

async function editTier(access: typeof ACCESS | null, calls: { method: string; input: unknown }[]) {
  const el = await mountWith(ProductsPanel, api(access, calls))
  button(el, 'Cluster').click()
  await flush()
  button(el, 'Edit').click()
  await flush()
  return el
}

function type(el: HTMLElement, selector: string, value: string): void {
  const input = el.querySelector(selector) as HTMLInputElement
  input.value = value
  input.dispatchEvent(new Event('input'))
}

afterEach(unmountAll)

describe('the tier editor’s top-up pack', () => {
  it('sends the pack in the tier’s currency with the rest of the access block unchanged', async () => {
    const calls: { method: string; input: unknown }[] = []
    const el = await editTier(ACCESS, calls)
    type(el, '#tf-topup', '500')
    type(el, 'input[aria-label="Top-up price"]', '2.50')
    await flush()
    button(el, 'Save tier').click()
    await flush()
    const saved = calls.find((c) => c.method === 'licAdminUpdatePolicy')?.input as { access: unknown }
    expect(saved.access).toEqual({ ...ACCESS, top_up: { tokens: 500, price_value: 250 } })
  })

  it('is not offered on a tier without access, whose save leaves access alone', async () => {
    const calls: { method: string; input: unknown }[] = []
    const el = await editTier(null, calls)
    expect(el.querySelector('#tf-topup')).toBeNull()
    button(el, 'Save tier').click()
    await flush()
    const saved = calls.find((c) => c.method === 'licAdminUpdatePolicy')?.input as Record<string, unknown>
    expect(saved).toBeDefined()
    expect('access' in saved).toBe(false)
  })
})
