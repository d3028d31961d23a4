// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import { BackendError, type BackendApi } from '../../../src-renderer/api'
import ProductsPanel from '../../../src-renderer/components/licensing/ProductsPanel.vue'
import { monthlyTier } from './fixtures'
import { button, flush, mountWith, unmountAll } from './mount'

/**
 * The tier editor sets a tier's whole access block (issue 45): whether it sells API access, its models
 * and limits, and the top-up pack, which it offers only on a tier with a token quota.
 */
const product = {
  id: 'prod-1',
  slug: 'api',
  name: 'Cluster',
  description: '',
  price_currency: 'USD',
  price_value: 900,
  active: true,
}
type Access = {
  models: string[] | null
  tokens_per_period: number | null
  requests_per_minute: number | null
  concurrent_streams: number | null
  audio_minutes_per_period: number | null
  top_up: { tokens: number; price_value: number } | null
}
const ACCESS: Access = {
  models: null,
  tokens_per_period: 2000,
  requests_per_minute: 30,
  concurrent_streams: 2,
  audio_minutes_per_period: null,
  top_up: null,
}
const tier = (access: Access | null) => monthlyTier({ access })
type Calls = { method: string; input: unknown }[]

/** The fake daemon; `refuse` is the 400 it answers a tier's save with. */
function api(access: Access | null, calls: Calls, refuse?: string): BackendApi {
  return {
    transport: 'http',
    call: (async (method: string, input: unknown) => {
      calls.push({ method, input })
      if (method === 'licAdminProducts') return { total: 1, products: [product] }
      if (method === 'licAdminPolicies') return [tier(access)]
      if (refuse && method === 'licAdminUpdatePolicy') throw new BackendError(refuse, 'bad_input', 400)
      if (method === 'licAdminUpdatePolicy' || method === 'licAdminCreatePolicy') return tier(access)
      throw new Error(`unexpected ${method}`)
    }) as BackendApi['call'],
    subscribe: () => () => undefined,
  }
}

/** The panel with product Cluster selected and its tier form open: tier p-1 (`Edit`) or a new one (`Add tier`). */
async function openTier(access: Access | null, calls: Calls, open: 'Edit' | 'Add tier' = 'Edit', refuse?: string) {
  const el = await mountWith(ProductsPanel, api(access, calls, refuse))
  button(el, 'Cluster').click()
  await flush()
  button(el, open).click()
  await flush()
  return el
}
const editTier = (access: Access | null, calls: Calls) => openTier(access, calls)

function type(el: HTMLElement, selector: string, value: string): void {
  const input = el.querySelector(selector) as HTMLInputElement
  input.value = value
  input.dispatchEvent(new Event('input'))
}

async function tick(el: HTMLElement, selector: string, checked: boolean): Promise<void> {
  const box = el.querySelector(selector) as HTMLInputElement
  box.checked = checked
  box.dispatchEvent(new Event('change'))
  await flush()
}

async function save(el: HTMLElement, calls: Calls, method = 'licAdminUpdatePolicy') {
  button(el, 'Save tier').click()
  await flush()
  return calls.find((c) => c.method === method)?.input as { access?: unknown } | undefined
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

  it('is not offered on a tier without access, whose save sends no access block', async () => {
    const calls: Calls = []
    const el = await editTier(null, calls)
    expect(el.querySelector('#tf-topup')).toBeNull()
    expect((el.querySelector('#tf-access') as HTMLInputElement).checked).toBe(false)
    expect((await save(el, calls))?.access).toBeNull()
  })
})

describe('the tier editor’s access block', () => {
  it('creates a tier that sells access with its models, limits and pack', async () => {
    const calls: Calls = []
    const el = await openTier(null, calls, 'Add tier')
    type(el, '#tf-name', 'API')
    type(el, '#tf-slug', 'api')
    expect(el.querySelector('#tf-models')).toBeNull()
    await tick(el, '#tf-access', true)
    type(el, '#tf-models', ' coder, whisper-large ,')
    type(el, '#tf-tokens', '100000')
    type(el, '#tf-rpm', '60')
    type(el, '#tf-audio', '30')
    await flush()
    type(el, '#tf-topup', '5000')
    type(el, 'input[aria-label="Top-up price"]', '1.25')
    const created = await save(el, calls, 'licAdminCreatePolicy')
    expect(created?.access).toEqual({
      models: ['coder', 'whisper-large'],
      tokens_per_period: 100000,
      requests_per_minute: 60,
      concurrent_streams: null,
      audio_minutes_per_period: 30,
      top_up: { tokens: 5000, price_value: 125 },
    })
  })

  it('takes access away when the box is unchecked', async () => {
    const calls: Calls = []
    const el = await editTier({ ...ACCESS, top_up: { tokens: 500, price_value: 250 } }, calls)
    expect((el.querySelector('#tf-access') as HTMLInputElement).checked).toBe(true)
    await tick(el, '#tf-access', false)
    expect(el.querySelector('#tf-tokens')).toBeNull()
    expect((await save(el, calls))?.access).toBeNull()
  })

  it('sends changed limits, an emptied one as no limit and emptied models as every model', async () => {
    const calls: Calls = []
    const el = await editTier({ ...ACCESS, models: ['coder'] }, calls)
    expect((el.querySelector('#tf-models') as HTMLInputElement).value).toBe('coder')
    expect((el.querySelector('#tf-rpm') as HTMLInputElement).value).toBe('30')
    type(el, '#tf-models', '')
    type(el, '#tf-tokens', '5000')
    type(el, '#tf-rpm', '')
    type(el, '#tf-streams', '8')
    expect((await save(el, calls))?.access).toEqual({
      ...ACCESS,
      tokens_per_period: 5000,
      requests_per_minute: null,
      concurrent_streams: 8,
    })
  })

  it('offers the pack only beside a token quota, and drops it with the quota', async () => {
    const calls: Calls = []
    const el = await editTier({ ...ACCESS, top_up: { tokens: 500, price_value: 250 } }, calls)
    expect((el.querySelector('#tf-topup') as HTMLInputElement).value).toBe('500')
    type(el, '#tf-tokens', '')
    await flush()
    expect(el.querySelector('#tf-topup')).toBeNull()
    expect((await save(el, calls))?.access).toEqual({ ...ACCESS, tokens_per_period: null, top_up: null })
  })

  it.each([
    ['#tf-rpm', '0', 'access.requests_per_minute'],
    ['#tf-tokens', '1.5', 'access.tokens_per_period'],
    ['#tf-audio', 'ten', 'access.audio_minutes_per_period'],
  ])('refuses %s = %s with an error naming the field, and sends nothing', async (field, value, named) => {
    const calls: Calls = []
    const el = await editTier(ACCESS, calls)
    type(el, field, value)
    expect(await save(el, calls)).toBeUndefined()
    expect(el.querySelector('[role="alert"]')?.textContent).toContain(named)
  })

  it('shows the server’s 400 naming the field, as the panel shows its other errors', async () => {
    const calls: Calls = []
    const refusal = 'access.models.0: a model id: letters, digits and . : / @ + - _'
    const el = await openTier(ACCESS, calls, 'Edit', refusal)
    type(el, '#tf-models', 'no spaces please')
    await save(el, calls)
    expect(calls.find((c) => c.method === 'licAdminUpdatePolicy')?.input).toMatchObject({
      access: { models: ['no spaces please'] },
    })
    expect(el.querySelector('[role="alert"]')?.textContent).toBe(refusal)
    expect(el.querySelector('.tierform')).not.toBeNull()
  })
})
