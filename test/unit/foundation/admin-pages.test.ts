import { describe, expect, expectTypeOf, it } from 'vitest'
import { z } from 'zod'
import { contract } from '../../../src-main/contract'
import type { MethodOutput } from '../../../src-main/contract/define'
import type { InvoiceView, LicenseView } from '../../../src-main/contract/licensing'
import { page, type Page } from '../../../src-main/contract/page'

/**
 * One paged-list shape for every admin list (issue 40, item 5): `{ total, <rows> }` built by one
 * `page()`, each list keeping its rows' name and field order on the wire (the OpenAPI documents
 * do not change).
 */
const LISTS = {
  licAdminInvoices: ['items', 'total'],
  licAdminLicenses: ['total', 'licenses'],
  licAdminSubscriptions: ['subscriptions', 'total'],
  licAdminProducts: ['total', 'products'],
  licAdminDiscounts: ['total', 'discounts'],
  licAdminWebhookEndpoints: ['total', 'endpoints'],
} as const

describe('admin list pages', () => {
  it('builds a page under the name given, in the field order given', () => {
    const p = page('rows', z.object({ id: z.string() }))
    expect(Object.keys(p.shape)).toEqual(['total', 'rows'])
    expect(Object.keys(page('rows', z.string(), 'rows-first').shape)).toEqual(['rows', 'total'])
    expect(p.parse({ total: 3, rows: [{ id: 'a' }] })).toEqual({ total: 3, rows: [{ id: 'a' }] })
    expect(p.safeParse({ total: 3, items: [] }).success).toBe(false)
  })

  it.each(Object.entries(LISTS))('%s answers a page with its rows where they always were', (name, keys) => {
    const output = contract[name as keyof typeof LISTS].output as z.ZodObject
    expect(Object.keys(output.shape)).toEqual(keys)
    const rows = keys.find((k) => k !== 'total')!
    expect(output.shape.total).toBeInstanceOf(z.ZodNumber)
    expect(output.shape[rows]).toBeInstanceOf(z.ZodArray)
  })

  it('types each list as a Page of its rows', () => {
    type Invoices = MethodOutput<(typeof contract)['licAdminInvoices']>
    type Licenses = MethodOutput<(typeof contract)['licAdminLicenses']>
    expectTypeOf<Invoices>().toExtend<Page<'items', InvoiceView>>()
    expectTypeOf<Page<'items', InvoiceView>>().toExtend<Invoices>()
    expectTypeOf<Licenses>().toExtend<Page<'licenses', LicenseView>>()
    expectTypeOf<Page<'licenses', LicenseView>>().toExtend<Licenses>()
  })
})
