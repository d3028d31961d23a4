import { parse } from 'csv-parse/sync'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CallContext } from '../../../src-main/contract/define'
import { invokeMethod, type AnyHandler, type Dispatcher } from '../../../src-main/app/invoke'
import { Limits } from '../../../src-main/platform/limits'
import { adminHandlers } from '../../../src-main/licensing/adminApi'
import { subscriptionHandlers } from '../../../src-main/licensing/subscriptionHandlers'
import { seedLicensing } from '../../helpers/licensingSeed'
import { paymentsHarness, type Harness } from './payments-harness'

/** Licensing admin lists at scale (issue 13, item 4): server-side paging, sorting, search, CSV, names. */
let h: Harness
let d: Dispatcher
const ctx: CallContext = {
  via: 'ipc',
  signal: new AbortController().signal,
  session: { begin: () => undefined, end: () => undefined, authenticated: true },
}
// Query strings arrive as strings over HTTP: the tests pass them that way.
const call = <T>(name: string, input: Record<string, string | undefined> = {}) =>
  invokeMethod(d, name, input, ctx) as Promise<T>

interface Page<T> {
  total: number
  licenses?: T[]
  items?: T[]
  subscriptions?: T[]
}
type Row = Record<string, unknown> & { id: string }

beforeAll(() => {
  h = paymentsHarness()
  seedLicensing(h.services, {
    licenses: 60,
    products: [
      { slug: 'notes', name: 'Field Notes' },
      { slug: 'atlas', name: 'Atlas Pro' },
    ],
    advance: (ms) => h.clock.advance(ms),
  })
  const handlers = {
    ...adminHandlers(h.services),
    ...h.payments.handlers,
    ...subscriptionHandlers(h.payments.subscriptions, h.clock),
  } as unknown as Record<string, AnyHandler>
  d = { handlers, limits: new Limits({ clock: h.clock, publicPerMinute: 0 }), logger: h.services.deps.logger }
})
afterAll(async () => h.close())

describe('licences list', () => {
  it('pages on the server: disjoint pages that add up to the total', async () => {
    const a = await call<Page<Row>>('licAdminLicenses', { limit: '25', offset: '0' })
    const b = await call<Page<Row>>('licAdminLicenses', { limit: '25', offset: '25' })
    const c = await call<Page<Row>>('licAdminLicenses', { limit: '25', offset: '50' })
    expect(a.total).toBe(60)
    expect([a, b, c].map((p) => p.licenses!.length)).toEqual([25, 25, 10])
    expect(new Set([...a.licenses!, ...b.licenses!, ...c.licenses!].map((l) => l.id)).size).toBe(60)
  })

  it('sorts by a named column in either direction, and refuses an unknown column', async () => {
    const asc = await call<Page<Row>>('licAdminLicenses', { sort: 'buyer_email', order: 'asc', limit: '3' })
    expect(asc.licenses!.map((l) => l.buyer_email)).toEqual([
      'buyer00000@example.com',
      'buyer00001@example.com',
      'buyer00002@example.com',
    ])
    const desc = await call<Page<Row>>('licAdminLicenses', { sort: 'issued_at', order: 'desc', limit: '1' })
    expect(desc.licenses![0]!.buyer_email).toBe('buyer00059@example.com')
    await expect(call('licAdminLicenses', { sort: 'issued_at; DROP TABLE licenses' })).rejects.toThrow(/sort/)
  })

  it('searches by product name as well as email, and shows names beside slugs', async () => {
    const atlas = await call<Page<Row>>('licAdminLicenses', { q: 'atlas pro', limit: '100' })
    expect(atlas.total).toBe(30)
    expect(atlas.licenses!.every((l) => l.product_name === 'Atlas Pro' && l.product_slug === 'atlas')).toBe(true)
    expect(atlas.licenses![0]!.policy_name).toEqual(expect.any(String))
    const one = await call<Page<Row>>('licAdminLicenses', { q: 'buyer00042@', limit: '10' })
    expect(one.licenses!.map((l) => l.buyer_email)).toEqual(['buyer00042@example.com'])
    // LIKE wildcards in the search are literal.
    expect((await call<Page<Row>>('licAdminLicenses', { q: '%' })).total).toBe(0)
  })
})

describe('invoices, subscriptions, machines and audit lists', () => {
  it('invoices page, sort by amount and search by product name', async () => {
    const page = await call<Page<Row>>('licAdminInvoices', { sort: 'amount_sats', order: 'asc', limit: '10' })
    const amounts = page.items!.map((i) => i.amount_sats as number)
    expect(amounts).toEqual([...amounts].sort((x, y) => x - y))
    expect(page.total).toBe(60)
    const notes = await call<Page<Row>>('licAdminInvoices', { q: 'field notes', limit: '5', offset: '5' })
    expect(notes.total).toBe(30)
    expect(notes.items).toHaveLength(5)
    expect(notes.items![0]!.policy_name).toEqual(expect.any(String))
  })

  it('subscriptions carry a total, page, filter and name product and tier', async () => {
    const all = await call<Page<Row>>('licAdminSubscriptions', { limit: '7' })
    expect(all.total).toBe(30)
    expect(all.subscriptions).toHaveLength(7)
    expect(all.subscriptions![0]).toMatchObject({ product_name: expect.any(String), policy_name: expect.any(String) })
    const active = await call<Page<Row>>('licAdminSubscriptions', { status: 'active', q: 'Atlas', limit: '100' })
    expect(active.subscriptions!.every((s) => s.status === 'active' && s.product_name === 'Atlas Pro')).toBe(true)
    const sorted = await call<Page<Row>>('licAdminSubscriptions', { sort: 'buyer_email', order: 'asc', limit: '2' })
    expect(sorted.subscriptions!.map((s) => s.buyer_email)).toEqual([
      'buyer00000@example.com',
      'buyer00002@example.com',
    ])
  })

  it('audit log pages by offset and searches', async () => {
    const first = await call<Row[]>('licAdminAudit', { limit: '10' })
    const second = await call<Row[]>('licAdminAudit', { limit: '10', offset: '10' })
    expect(first).toHaveLength(10)
    expect(second.map((e) => e.id)).not.toContain(first[0]!.id)
    expect((second[0]!.id as unknown as number) < (first[9]!.id as unknown as number)).toBe(true)
    const found = await call<Row[]>('licAdminAudit', { q: 'license.issue', limit: '1000' })
    expect(found.length).toBeGreaterThanOrEqual(60)
    expect(found.every((e) => String(e.action).includes('license.issue'))).toBe(true)
  })

  it('machines list searches, sorts, pages and names the product', async () => {
    const product = h.services.catalog.createProduct({
      slug: 'seats',
      name: 'Seat Manager',
      description: '',
      price_currency: 'SAT',
      price_value: 1,
      entitlements_catalog: [],
      active: true,
    })
    const policy = h.services.catalog.policyRows(product.id)[0]!
    h.services.catalog.updatePolicy(policy.id, { max_machines: 0 })
    const { license_key } = h.services.licenses.issuing.issueComplimentary({ productId: product.id })
    for (const host of ['charlie', 'alpha', 'bravo']) {
      const fingerprint = `fp-${host}-0123456789abcdef`
      expect(h.services.licenses.machines.activate({ key: license_key, fingerprint, hostname: `${host}.lan` }).ok).toBe(
        true,
      )
    }
    const byHost = await call<Row[]>('licAdminMachines', { q: 'seat manager', sort: 'hostname', order: 'asc' })
    expect(byHost.map((m) => m.hostname)).toEqual(['alpha.lan', 'bravo.lan', 'charlie.lan'])
    expect(byHost.every((m) => m.product_name === 'Seat Manager' && m.product_slug === 'seats')).toBe(true)
    const second = await call<Row[]>('licAdminMachines', { sort: 'hostname', order: 'asc', limit: '1', offset: '1' })
    expect(second.map((m) => m.hostname)).toEqual(['bravo.lan'])
    expect(await call('licAdminMachines', { q: 'nothing-like-this' })).toEqual([])
  })
})

describe('CSV export (RFC 4180)', () => {
  it('licences: every matching row, names beside slugs, parses back', async () => {
    const out = await call<{ filename: string; rows: number; csv: string }>('licAdminExportLicenses', { q: 'Atlas' })
    expect(out.filename).toMatch(/^licenses-\d{4}-\d{2}-\d{2}\.csv$/)
    expect(out.rows).toBe(30)
    expect(out.csv.endsWith('\r\n')).toBe(true)
    const records = parse(out.csv, { columns: true }) as Record<string, string>[]
    expect(records).toHaveLength(30)
    expect(records[0]).toMatchObject({ product: 'atlas', product_name: 'Atlas Pro', status: 'active' })
    expect(records.map((r) => r.buyer_email)).toContain('buyer00001@example.com')
  })

  it('quotes commas, quotes and line breaks, and defuses spreadsheet formulas', async () => {
    const product = h.services.catalog.createProduct({
      slug: 'tricky',
      name: 'Tricky, "quoted"\r\nname',
      description: '',
      price_currency: 'SAT',
      price_value: 1,
      entitlements_catalog: [],
      active: true,
    })
    h.services.licenses.issuing.issueComplimentary({ productId: product.id, buyerNote: '=HYPERLINK("http://x")' })
    const out = await call<{ csv: string }>('licAdminExportLicenses', { product_id: product.id })
    const records = parse(out.csv, { columns: true }) as Record<string, string>[]
    expect(records).toHaveLength(1)
    expect(records[0]!.product_name).toBe('Tricky, "quoted"\r\nname')
    expect(records[0]!.buyer_note).toBe(`'=HYPERLINK("http://x")`)
  })

  it('invoices and subscriptions export with the list filter', async () => {
    const inv = await call<{ rows: number; csv: string }>('licAdminExportInvoices', { status: 'settled' })
    const invRows = parse(inv.csv, { columns: true }) as Record<string, string>[]
    expect(inv.rows).toBe(40)
    expect(invRows.every((r) => r.status === 'settled' && r.product_name !== '')).toBe(true)
    expect(Number(invRows[0]!.amount_sats)).toBeGreaterThan(0)
    const subs = await call<{ rows: number; csv: string }>('licAdminExportSubscriptions', { status: 'cancelled' })
    const subRows = parse(subs.csv, { columns: true }) as Record<string, string>[]
    expect(subRows).toHaveLength(15)
    expect(subRows[0]).toMatchObject({
      status: 'cancelled',
      tier_name: expect.any(String),
      product_name: expect.any(String),
    })
  })
})
