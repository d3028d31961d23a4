// @vitest-environment happy-dom
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { BackendApi } from '../../../src-renderer/api'
import LicensesPanel from '../../../src-renderer/components/licensing/LicensesPanel.vue'
import { button, flush, mountWith, unmountAll } from './mount'

/** The Licenses tab pages, sorts, searches as you type and exports on the server (issue 13, item 4). */
type Call = { method: string; input: Record<string, unknown> }
const TOTAL = 120

const license = (i: number) => ({
  id: `lic-${String(i).padStart(4, '0')}-aaaa-bbbb`,
  product_id: 'p1',
  product_slug: 'notes',
  product_name: 'Field Notes',
  policy_id: 'pol1',
  policy_slug: 'team',
  policy_name: 'Team plan',
  invoice_id: null,
  status: 'active',
  status_reason: null,
  source: 'purchase',
  issued_at: Date.UTC(2026, 10, 1) + i,
  expires_at: null,
  grace_period_days: 7,
  max_machines: 1,
  entitlements: [],
  is_trial: false,
  bound: false,
  buyer_email: `b${i}@example.com`,
  buyer_note: null,
  active_machines: 0,
  updated_at: 0,
})

function fakeApi(calls: Call[]): BackendApi {
  return {
    transport: 'http',
    call: (async (method: string, input: Record<string, unknown>) => {
      calls.push({ method, input })
      if (method === 'licAdminProducts') return { total: 0, products: [] }
      if (method === 'licAdminLicenses') {
        const offset = input.offset as number
        const rows = Array.from({ length: Math.min(50, TOTAL - offset) }, (_, i) => license(offset + i))
        return { total: TOTAL, licenses: rows }
      }
      if (method === 'licAdminExportLicenses')
        return { filename: 'licenses-2026-11-23.csv', rows: 1, csv: 'id\r\nx\r\n' }
      throw new Error(`unexpected ${method}`)
    }) as BackendApi['call'],
    subscribe: () => () => undefined,
  }
}

const lastList = (calls: Call[]) => calls.filter((c) => c.method === 'licAdminLicenses').at(-1)?.input

afterEach(unmountAll)

describe('Licenses tab at scale', () => {
  it('asks the server for one page, sorted, and pages with Next/Previous', async () => {
    const calls: Call[] = []
    const el = await mountWith(LicensesPanel, fakeApi(calls))
    expect(lastList(calls)).toMatchObject({ sort: 'issued_at', order: 'desc', limit: 50, offset: 0 })
    expect(el.querySelectorAll('tbody tr').length).toBe(50)
    expect(el.textContent).toContain('1–50 of 120')
    expect(el.textContent).toContain('Team plan')
    button(el, 'Next').click()
    await flush()
    expect(lastList(calls)).toMatchObject({ offset: 50 })
    expect(el.textContent).toContain('51–100 of 120')
  })

  it('sorts by a column header, flipping direction on a second click', async () => {
    const calls: Call[] = []
    const el = await mountWith(LicensesPanel, fakeApi(calls))
    button(el, /^Buyer/).click()
    await flush()
    expect(lastList(calls)).toMatchObject({ sort: 'buyer_email', order: 'desc', offset: 0 })
    button(el, /^Buyer/).click()
    await flush()
    expect(lastList(calls)).toMatchObject({ sort: 'buyer_email', order: 'asc' })
    expect(el.querySelector('th[aria-sort="ascending"]')?.textContent).toContain('Buyer')
  })

  it('searches as you type, from the first page', async () => {
    const calls: Call[] = []
    const el = await mountWith(LicensesPanel, fakeApi(calls))
    button(el, 'Next').click()
    await flush()
    const input = el.querySelector('input[aria-label="Search licenses"]') as HTMLInputElement
    input.value = 'b7@'
    input.dispatchEvent(new Event('input'))
    await new Promise((r) => setTimeout(r, 400))
    await flush()
    expect(lastList(calls)).toMatchObject({ q: 'b7@', offset: 0 })
  })

  it('exports the filtered list as a CSV download', async () => {
    const calls: Call[] = []
    const clicked: string[] = []
    const spy = vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(function (this: HTMLAnchorElement) {
      clicked.push(this.download)
    })
    const el = await mountWith(LicensesPanel, fakeApi(calls))
    button(el, 'Export CSV').click()
    await flush()
    expect(calls.find((c) => c.method === 'licAdminExportLicenses')?.input).toMatchObject({ sort: 'issued_at' })
    expect(clicked).toEqual(['licenses-2026-11-23.csv'])
    spy.mockRestore()
  })
})
