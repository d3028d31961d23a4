// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import type { AccessLicenseRow } from '../../../src-main/contract/licensing'
import type { BackendApi, OutputOf } from '../../../src-renderer/api'
import AccessPanel from '../../../src-renderer/components/licensing/AccessPanel.vue'
import { button, flush, mountWith, unmountAll } from './mount'

const row = (
  id: string,
  email: string | null,
  allowed: number | null,
  used: number,
  audio: { allowed: number | null; used: number } = { allowed: null, used: 0 },
): AccessLicenseRow => ({
  license_id: id,
  product_slug: 'cluster',
  tier_slug: allowed === null ? 'open' : 'api',
  buyer_email: email,
  tokens_allowed: allowed,
  top_up_tokens: allowed === 1500 ? 500 : 0,
  tokens_used: used,
  tokens_remaining: allowed === null ? null : Math.max(0, allowed - used),
  audio_seconds_allowed: audio.allowed,
  audio_seconds_used: audio.used,
  revenue_sats: 0,
  period_start: Date.UTC(2026, 0, 1),
  resets_at: Date.UTC(2026, 1, 1),
})

function view(offset: number): OutputOf<'licAdminAccess'> {
  const all = [
    row('lic-a', 'heavy@example.com', 1000, 1200, { allowed: 600, used: 450 }),
    row('lic-b', 'light@example.com', 1500, 375),
    row('lic-c', null, null, 10),
  ]
  return {
    total: 51,
    licenses: offset === 0 ? all : [row('lic-z', 'last@example.com', 1000, 0)],
    totals: {
      licenses: 51,
      unlimited_licenses: 1,
      tokens_sold: 52_500,
      tokens_used: 1585,
      audio_seconds_sold: 600,
      audio_seconds_used: 450,
      revenue_sats: 3000,
    },
    revenue: [
      { model: 'sim/model-a', tokens: 1500, requests: 9, revenue_sats: 2000 },
      { model: null, tokens: 0, requests: 0, revenue_sats: 1000 },
    ],
    top_consumers: all.slice(0, 2),
  }
}

function fakeApi(calls: unknown[]): BackendApi {
  return {
    transport: 'http',
    call: (async (method: string, input: { offset: number }) => {
      calls.push([method, input])
      return view(input.offset)
    }) as BackendApi['call'],
    subscribe: () => () => undefined,
  }
}

afterEach(unmountAll)

describe('the API access tab', () => {
  it('shows tokens sold vs used, revenue per model, top consumers and each license against its quota', async () => {
    const calls: unknown[] = []
    const el = await mountWith(AccessPanel, fakeApi(calls))
    expect(calls).toEqual([['licAdminAccess', { limit: 50, offset: 0 }]])
    const totals = el.querySelector('[data-testid="access-totals"]')!.textContent!
    expect(totals).toContain('52,500')
    expect(totals).toContain('1,585')
    expect(totals).toContain('+ 1 without a quota')
    const revenue = el.querySelector('[data-testid="access-revenue"]')!.textContent!
    expect(revenue).toContain('sim/model-a')
    expect(revenue).toContain('paid, not used yet')
    expect(el.querySelector('[data-testid="access-top"]')!.textContent).toMatch(/heavy@example\.com — 1,200 tokens/)

    const rows = [...el.querySelectorAll('[data-testid="access-licenses"] tbody tr')]
    expect(rows).toHaveLength(3)
    const meters = el.querySelectorAll('[data-testid="access-licenses"] [role="meter"]')
    // Over quota shows full (and marked spent); a quarter used shows 25; no quota has no bar.
    expect([...meters].map((m) => m.getAttribute('aria-valuenow'))).toEqual(['100', '25'])
    expect(meters[0]!.firstElementChild!.classList.contains('spent')).toBe(true)
    expect(rows[1]!.textContent).toContain('incl. 500 top-up')
    expect(rows[2]!.textContent).toContain('no quota')
    // Audio minutes: used of allowed where the tier sells them, a dash where it does not.
    const audio = [...el.querySelectorAll('[data-testid="access-audio"]')].map((c) => c.textContent!.trim())
    expect(audio).toEqual(['7.5 / 10', '—', '—'])
    expect(totals).toContain('Audio minutes used / sold')
    expect(totals).toContain('7.5 / 10')

    button(el, 'Next').click()
    await flush()
    expect(calls.at(-1)).toEqual(['licAdminAccess', { limit: 50, offset: 50 }])
    expect(el.querySelector('[data-testid="access-licenses"]')!.textContent).toContain('last@example.com')
  })
})
