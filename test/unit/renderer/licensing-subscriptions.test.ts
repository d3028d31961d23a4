// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import type { BackendApi } from '../../../src-renderer/api'
import { monthlyTier } from './fixtures'
import { button, buttons, flush, mountWith, unmountAll } from './mount'
import { defineComponent, h } from 'vue'
import SubscriptionsPanel from '../../../src-renderer/components/licensing/SubscriptionsPanel.vue'
import ProductsPanel from '../../../src-renderer/components/licensing/ProductsPanel.vue'
import TierChangeCard from '../../../src-renderer/components/licensing/TierChangeCard.vue'
import { priceLine } from '../../../src-shared/priceLine'

const XSS = '<img src=x onerror=alert(1)>'

const sub = (status: 'active' | 'past_due' | 'cancelled') => ({
  id: 'sub-1111-2222',
  license_id: 'lic-1',
  product_slug: 'app',
  product_name: 'App Deluxe',
  policy_id: 'pol-1',
  policy_slug: 'monthly',
  policy_name: 'Monthly plan',
  buyer_email: `buyer${XSS}@example.com`,
  status,
  listed_currency: 'USD' as const,
  listed_value: 900,
  period_days: 30,
  next_renewal_at: Date.UTC(2026, 11, 1),
  due_at: Date.UTC(2026, 10, 1),
  last_renewal_attempt_at: Date.UTC(2026, 10, 1),
  consecutive_failures: status === 'past_due' ? 5 : 0,
  failure_reason: status === 'past_due' ? `provider refused: 503 ${XSS}` : null,
  cancelled_at: status === 'cancelled' ? Date.UTC(2026, 10, 2) : null,
  created_at: Date.UTC(2026, 9, 1),
  cycles: [
    { cycle_number: 1, invoice_id: 'inv-cycle-1', status: 'settled', created_at: Date.UTC(2026, 9, 1) },
    { cycle_number: 2, invoice_id: 'inv-cycle-2', status: 'pending', created_at: Date.UTC(2026, 10, 1) },
  ],
})

type Call = { method: string; input: Record<string, unknown> }

function fakeApi(calls: Call[], initial: 'active' | 'past_due'): BackendApi {
  let current = sub(initial)
  return {
    transport: 'http',
    call: (async (method: string, input: Record<string, unknown>) => {
      calls.push({ method, input })
      if (method === 'licAdminCancelSubscription') {
        current = sub('cancelled')
        return current
      }
      if (method === 'licAdminSubscriptions') {
        const wanted = input.status
        const subscriptions = wanted && wanted !== current.status ? [] : [current]
        return { subscriptions, total: subscriptions.length }
      }
      throw new Error(`unexpected ${method}`)
    }) as BackendApi['call'],
    subscribe: () => () => undefined,
  }
}

afterEach(unmountAll)

describe('subscriptions tab', () => {
  it('lists subscriptions with their failures and backoff reason, escaped, and filters by status', async () => {
    const calls: Call[] = []
    const el = await mountWith(SubscriptionsPanel, fakeApi(calls, 'past_due'))
    const page = { q: undefined, sort: 'created_at', order: 'desc', limit: 50, offset: 0 }
    expect(calls[0]).toEqual({ method: 'licAdminSubscriptions', input: { status: undefined, ...page } })
    // Names beside slugs (issue 13, item 4).
    expect(el.textContent).toContain('App Deluxe')
    expect(el.textContent).toContain('Monthly plan')
    expect(el.textContent).toContain('$9.00 / 30 d')
    expect(el.textContent).toContain('5 (renewals stopped): provider refused: 503')
    expect(el.querySelector('img')).toBeNull()

    const select = el.querySelector('select[aria-label="Status"]') as HTMLSelectElement
    select.value = 'active'
    select.dispatchEvent(new Event('change'))
    await flush()
    expect(calls.at(-1)).toEqual({ method: 'licAdminSubscriptions', input: { status: 'active', ...page } })
    expect(el.textContent).toContain('No subscriptions')
  })

  it('shows the cycles with their invoices and cancels only after confirmation', async () => {
    const calls: Call[] = []
    const el = await mountWith(SubscriptionsPanel, fakeApi(calls, 'active'))
    button(el, 'sub-1111').click()
    await flush()
    const detail = el.querySelector('[data-testid="sub-detail"]')!
    expect(detail.textContent).toContain('inv-cycle-1')
    expect(detail.textContent).toContain('inv-cycle-2')

    button(el, 'Cancel subscription').click()
    await flush()
    expect(calls.map((c) => c.method)).not.toContain('licAdminCancelSubscription')
    expect(el.querySelector('[role="alertdialog"]')?.textContent).toContain('Cancel this subscription?')

    button(el, 'Confirm').click()
    await flush()
    expect(calls.find((c) => c.method === 'licAdminCancelSubscription')?.input).toEqual({ id: 'sub-1111-2222' })
    expect(el.querySelector('[data-testid="sub-detail"]')?.textContent).toContain('cancelled')
    expect(buttons(el, 'Cancel subscription')).toEqual([])
  })
})

const tierChange = (applied: boolean, reason: string) => ({
  id: 'tc-1',
  license_id: 'lic-1',
  from_policy_slug: 'basic',
  to_policy_slug: 'pro',
  direction: 'upgrade',
  listed_currency: 'USD' as const,
  proration_charge_value: applied ? 0 : 450,
  invoice_id: applied ? null : 'inv-upgrade-1',
  effective_at: Date.UTC(2026, 10, 1),
  applied_at: applied ? Date.UTC(2026, 10, 1) : null,
  actor: 'admin' as const,
  reason,
  created_at: Date.UTC(2026, 10, 1),
})

function tierApi(calls: Call[]): BackendApi {
  const history: ReturnType<typeof tierChange>[] = [tierChange(true, `comp ${XSS}`)]
  return {
    transport: 'http',
    call: (async (method: string, input: Record<string, unknown>) => {
      calls.push({ method, input })
      if (method === 'licAdminTierChanges') return { tier_changes: history }
      if (method === 'licAdminPolicies')
        return [
          { id: 'p-basic', slug: 'basic', name: 'Basic', tier_rank: 1 },
          { id: 'p-pro', slug: 'pro', name: 'Pro', tier_rank: 2 },
          { id: 'p-vip', slug: 'vip', name: 'VIP', tier_rank: null },
        ]
      if (method === 'licAdminChangeTier') {
        const tc = {
          ...tierChange(input.skip_payment === true, String(input.reason)),
          to_policy_slug: String(input.to_policy_slug),
        }
        history.unshift(tc)
        return input.skip_payment
          ? { tier_change: tc, invoice_id: null, checkout_url: null }
          : { tier_change: tc, invoice_id: 'inv-upgrade-1', checkout_url: 'https://pay.example/i/inv-upgrade-1' }
      }
      throw new Error(`unexpected ${method}`)
    }) as BackendApi['call'],
    subscribe: () => () => undefined,
  }
}

const onLicence = (changed: () => void) =>
  defineComponent({
    render: () =>
      h(TierChangeCard, { licenseId: 'lic-1', productId: 'prod-1', currentSlug: 'basic', onChanged: changed }),
  })

function choose(el: HTMLElement, slug: string, skip: boolean, reason: string): void {
  const to = el.querySelector('#tc-to') as HTMLSelectElement
  to.value = slug
  to.dispatchEvent(new Event('change'))
  const box = el.querySelector('#tc-skip') as HTMLInputElement
  if (box.checked !== skip) box.click()
  const why = el.querySelector('#tc-reason') as HTMLInputElement
  why.value = reason
  why.dispatchEvent(new Event('input'))
}

describe('tier changes on the licence detail', () => {
  it('shows the history escaped and offers every other tier, including ones outside the ladder', async () => {
    const calls: Call[] = []
    const el = await mountWith(
      onLicence(() => undefined),
      tierApi(calls),
    )
    expect(calls.find((c) => c.method === 'licAdminTierChanges')?.input).toEqual({ id: 'lic-1' })
    expect(el.textContent).toContain('basic → pro')
    expect(el.textContent).toContain(`comp ${XSS}`)
    expect(el.querySelector('img')).toBeNull()
    const options = [...el.querySelectorAll('#tc-to option')].map((o) => (o as HTMLOptionElement).value)
    expect(options).toEqual(['', 'pro', 'vip'])
    expect(el.textContent).toContain('outside the ladder')
  })

  it('changes tier only after confirmation, and hands back the checkout link to forward', async () => {
    const calls: Call[] = []
    let changed = 0
    const el = await mountWith(
      onLicence(() => changed++),
      tierApi(calls),
    )
    choose(el, 'pro', false, 'asked by e-mail')
    await flush()
    button(el, 'Change tier').click()
    await flush()
    expect(calls.map((c) => c.method)).not.toContain('licAdminChangeTier')
    expect(el.querySelector('[role="alertdialog"]')?.textContent).toContain('Create an invoice')
    button(el, 'Confirm').click()
    await flush()
    expect(calls.find((c) => c.method === 'licAdminChangeTier')?.input).toEqual({
      id: 'lic-1',
      to_policy_slug: 'pro',
      skip_payment: false,
      reason: 'asked by e-mail',
    })
    expect(el.textContent).toContain('https://pay.example/i/inv-upgrade-1')
    expect(el.textContent).toContain('awaiting payment')
    expect(changed).toBe(1)
  })

  it('applies at once when payment is skipped', async () => {
    const calls: Call[] = []
    const el = await mountWith(
      onLicence(() => undefined),
      tierApi(calls),
    )
    choose(el, 'vip', true, 'partner')
    await flush()
    button(el, 'Change tier').click()
    await flush()
    expect(el.querySelector('[role="alertdialog"]')?.textContent).toContain('without payment')
    button(el, 'Confirm').click()
    await flush()
    expect(calls.find((c) => c.method === 'licAdminChangeTier')?.input).toMatchObject({ skip_payment: true })
    expect(el.textContent).toContain('The license is now on vip.')
    expect(el.textContent).not.toContain('Copy checkout link')
  })
})

describe('what a buyer sees for a tier', () => {
  it('words recurring prices per period, trials and one-time prices', () => {
    const base = {
      currency: 'USD',
      value: 900,
      isRecurring: true,
      renewalPeriodDays: 30,
      trialDays: 14,
      durationDays: 0,
    }
    expect(priceLine(base)).toBe('$9.00 every 30 days, 14-day free trial')
    expect(priceLine({ ...base, trialDays: 0, renewalPeriodDays: 1 })).toBe('$9.00 every day')
    expect(priceLine({ ...base, isRecurring: false, trialDays: 0 })).toBe('$9.00, one-time')
    expect(priceLine({ ...base, isRecurring: false, trialDays: 0, durationDays: 365 })).toBe('$9.00 for 365 days')
  })
})

describe('tier editor', () => {
  const product = {
    id: 'prod-1',
    slug: 'app',
    name: 'App',
    description: '',
    price_currency: 'USD',
    price_value: 900,
    active: true,
  }
  const monthly = monthlyTier()
  const productsApi: BackendApi = {
    transport: 'http',
    call: (async (method: string) => {
      if (method === 'licAdminProducts') return { total: 1, products: [product] }
      if (method === 'licAdminPolicies') return [monthly]
      throw new Error(`unexpected ${method}`)
    }) as BackendApi['call'],
    subscribe: () => () => undefined,
  }

  it('shows what a buyer will see, following the recurring, period and trial fields as they are typed', async () => {
    const el = await mountWith(ProductsPanel, productsApi)
    button(el, 'App').click()
    await flush()
    button(el, 'Edit').click()
    await flush()
    const sees = () => el.querySelector('[data-testid="buyer-sees"]')?.textContent?.trim()
    expect(sees()).toBe('$9.00 every 30 days')

    const trial = el.querySelector('input[aria-label="Trial days"]') as HTMLInputElement
    trial.value = '14'
    trial.dispatchEvent(new Event('input'))
    await flush()
    expect(sees()).toBe('$9.00 every 30 days, 14-day free trial')

    const price = el.querySelector('input[aria-label="Override amount"]') as HTMLInputElement
    price.value = '4.5'
    price.dispatchEvent(new Event('input'))
    ;(el.querySelector('#tf-rec') as HTMLInputElement).click()
    await flush()
    expect(sees()).toBe('$4.50, one-time, 14-day free trial')
  })
})
