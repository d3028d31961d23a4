import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'

/** Products, discount codes and webhook endpoints: paged, sorted and searched by the server over HTTP. */
let d: TestDaemon
const clock = new ManualClock(1_700_000_000_000)

type Json = Record<string, unknown>
interface Page {
  total: number
  products?: Json[]
  discounts?: Json[]
  endpoints?: Json[]
}

async function admin<T = Json>(path: string, method = 'GET', body?: unknown): Promise<T> {
  const res = await d.admin(path, { method, body: body === undefined ? undefined : JSON.stringify(body) })
  const out = (await res.json()) as T
  expect(res.status, JSON.stringify(out)).toBe(200)
  return out
}
const get = (path: string) => admin<Page>(path)
const status = async (path: string) => (await d.admin(path)).status
const pad = (i: number) => String(i).padStart(2, '0')

beforeAll(async () => {
  d = await startDaemon({ clock, env: { LICENSING_RATE_LIMIT: '0' } })
  // Created one second apart, so "newest first" has one answer.
  for (let i = 0; i < 12; i++) {
    clock.advance(1000)
    await admin('/v1/admin/products', 'POST', { slug: `app-${pad(i)}`, name: `${i % 2 ? 'Atlas' : 'Notes'} ${pad(i)}` })
  }
  const atlas = (await get('/v1/admin/products?q=atlas%2001')).products![0]!
  for (let i = 0; i < 30; i++) {
    clock.advance(1000)
    await admin('/v1/admin/discount-codes', 'POST', {
      code: `${i < 20 ? 'SPRING' : 'FALL'}-${pad(i)}`,
      kind: 'percent',
      value: 10,
      product_id: i % 3 === 0 ? atlas.id : null,
    })
  }
  for (let i = 0; i < 7; i++) {
    clock.advance(1000)
    await admin('/v1/admin/webhook-endpoints', 'POST', {
      url: i === 6 ? 'https://ops:hunter2-secret@hooks.example.test/in' : `https://h${i}.example.test/hook`,
      secret: `a-signing-secret-${i}-0123456789`,
      description: i === 3 ? 'Billing receiver' : '',
    })
  }
})
afterAll(async () => d.stop())

describe('products list', () => {
  it('pages newest first with the total', async () => {
    const a = await get('/v1/admin/products?limit=5&offset=0')
    const c = await get('/v1/admin/products?limit=5&offset=10')
    expect(a.total).toBe(12)
    expect(a.products!.map((p) => p.slug)).toEqual(['app-11', 'app-10', 'app-09', 'app-08', 'app-07'])
    expect(c.products!.map((p) => p.slug)).toEqual(['app-01', 'app-00'])
  })

  it('sorts by name and searches name or slug', async () => {
    const byName = await get('/v1/admin/products?sort=name&order=asc&limit=3')
    expect(byName.products!.map((p) => p.name)).toEqual(['Atlas 01', 'Atlas 03', 'Atlas 05'])
    const atlas = await get('/v1/admin/products?q=ATLAS&limit=2')
    expect(atlas.total).toBe(6)
    expect(atlas.products).toHaveLength(2)
    expect((await get('/v1/admin/products?q=app-07')).products!.map((p) => p.name)).toEqual(['Atlas 07'])
    expect((await get('/v1/admin/products?q=%25')).total).toBe(0)
  })

  it('refuses a sort outside the whitelist and a limit over the cap', async () => {
    expect(await status('/v1/admin/products?sort=price_sats')).toBe(400)
    expect(await status('/v1/admin/products?sort=name%3B%20DROP%20TABLE%20products')).toBe(400)
    expect(await status('/v1/admin/products?limit=501')).toBe(400)
  })
})

describe('discount codes list', () => {
  it('pages newest first with the total', async () => {
    const a = await get('/v1/admin/discount-codes?limit=4')
    expect(a.total).toBe(30)
    expect(a.discounts!.map((x) => x.code)).toEqual(['FALL-29', 'FALL-28', 'FALL-27', 'FALL-26'])
    const last = await get('/v1/admin/discount-codes?limit=4&offset=28')
    expect(last.discounts!.map((x) => x.code)).toEqual(['SPRING-01', 'SPRING-00'])
    expect(last.discounts![0]).toMatchObject({ redemption_count: 0, pending_count: 0 })
  })

  it('sorts by code and searches the code or the product it is scoped to', async () => {
    const byCode = await get('/v1/admin/discount-codes?sort=code&order=asc&limit=2')
    expect(byCode.discounts!.map((x) => x.code)).toEqual(['FALL-20', 'FALL-21'])
    const spring = await get('/v1/admin/discount-codes?q=spring&limit=100')
    expect(spring.total).toBe(20)
    const scoped = await get('/v1/admin/discount-codes?q=Atlas%2001&limit=100')
    expect(scoped.total).toBe(10)
    expect(scoped.discounts!.every((x) => typeof x.product_id === 'string')).toBe(true)
    // The scope's name comes with each code, so the panel never looks it up in a list of its own.
    expect(new Set(scoped.discounts!.map((x) => x.product_name))).toEqual(new Set(['Atlas 01']))
    expect(spring.discounts!.filter((x) => x.product_id === null).every((x) => x.product_name === null)).toBe(true)
    expect((await get('/v1/admin/discount-codes?q=_')).total).toBe(0)
  })

  it('refuses a sort outside the whitelist', async () => {
    expect(await status('/v1/admin/discount-codes?sort=value')).toBe(400)
    expect(await status('/v1/admin/discount-codes?limit=0')).toBe(400)
  })
})

describe('webhook endpoints list', () => {
  it('pages newest first with the total, never showing a secret', async () => {
    const a = await get('/v1/admin/webhook-endpoints?limit=3')
    expect(a.total).toBe(7)
    expect(a.endpoints!.map((e) => e.url)).toEqual([
      'https://ops:***@hooks.example.test/in',
      'https://h5.example.test/hook',
      'https://h4.example.test/hook',
    ])
    const text = JSON.stringify(await get('/v1/admin/webhook-endpoints?limit=100'))
    expect(text).not.toMatch(/hunter2|a-signing-secret/)
  })

  it('sorts by URL and searches the URL (as shown) or the description', async () => {
    const byUrl = await get('/v1/admin/webhook-endpoints?sort=url&order=asc&limit=2')
    expect(byUrl.endpoints!.map((e) => e.url)).toEqual(['https://h0.example.test/hook', 'https://h1.example.test/hook'])
    expect((await get('/v1/admin/webhook-endpoints?q=h2.example')).endpoints!.map((e) => e.url)).toEqual([
      'https://h2.example.test/hook',
    ])
    expect((await get('/v1/admin/webhook-endpoints?q=billing')).endpoints!.map((e) => e.url)).toEqual([
      'https://h3.example.test/hook',
    ])
    // The password in a URL is not searchable: the search would tell it letter by letter.
    expect((await get('/v1/admin/webhook-endpoints?q=hunter2')).total).toBe(0)
    expect((await get('/v1/admin/webhook-endpoints?q=ops:')).total).toBe(1)
  })

  it('refuses a sort outside the whitelist', async () => {
    expect(await status('/v1/admin/webhook-endpoints?sort=secret')).toBe(400)
  })
})
