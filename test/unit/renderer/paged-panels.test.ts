import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * The six paged admin panels share one list: `usePagedList` (filter, load, pager, sort) and
 * `PagedTable` (header, rows, pager, empty state), so none carries its own copy (issue 40, item 5).
 */
const DIR = path.resolve(__dirname, '../../../src-renderer/components/licensing')
const PANELS = {
  InvoicesPanel: 'licAdminInvoices',
  LicensesPanel: 'licAdminLicenses',
  SubscriptionsPanel: 'licAdminSubscriptions',
  ProductsPanel: 'licAdminProducts',
  DiscountsPanel: 'licAdminDiscounts',
  WebhooksPanel: 'licAdminWebhookEndpoints',
}

describe.each(Object.entries(PANELS))('%s', (panel, method) => {
  const text = fs.readFileSync(path.join(DIR, `${panel}.vue`), 'utf8')

  it('pages its list through the shared composable and table', () => {
    expect(text).toMatch(new RegExp(`usePagedList\\(\\{\\s*method: '${method}'`))
    expect(text).toContain('<PagedTable')
  })

  it('carries no pager, sort header or page state of its own', () => {
    expect(text).not.toContain('useServerList(')
    expect(text).not.toContain('<ListPager')
    expect(text).not.toContain('<SortTh')
    expect(text).not.toMatch(/const total = ref\(/)
  })
})
