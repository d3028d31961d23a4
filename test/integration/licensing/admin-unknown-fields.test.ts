import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { methodDef, parseInput } from '../../../src-main/app/invoke'
import { ApiError } from '../../../src-main/contract/errors'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'

/** The admin API refuses fields it does not know instead of silently dropping them (issue 13, item 4). */
describe('admin API unknown fields', () => {
  let d: TestDaemon
  beforeAll(async () => {
    d = await startDaemon()
  })
  afterAll(async () => d.stop())

  const post = (path: string, body: unknown, verb = 'POST') =>
    d.admin(path, { method: verb, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

  it('answers 400 naming the unknown field on a policy create, and creates nothing', async () => {
    const created = await post('/v1/admin/products', { slug: 'uf-app', name: 'UF App', price_value: 500 })
    const product = (await created.json()) as { id: string }
    const listPolicies = async () =>
      (await (await d.admin(`/v1/admin/products/${product.id}/policies`)).json()) as { slug: string }[]
    const before = await listPolicies()
    const res = await post(`/v1/admin/products/${product.id}/policies`, { slug: 'pro', name: 'Pro', price_value: 900 })
    expect(res.status).toBe(400)
    const body = (await res.json()) as { detail: string; code: string }
    expect(body.code).toBe('bad_input')
    expect(body.detail).toContain('price_value')
    const after = await listPolicies()
    expect(after).toEqual(before)
    expect(after.map((p) => p.slug)).not.toContain('pro')
  })

  it('names every unknown field, nested ones with their path', async () => {
    const res = await post('/v1/admin/products', {
      slug: 'uf-two',
      name: 'Two',
      colour: 'red',
      entitlements_catalog: [{ slug: 'export', name: 'Export', weight: 3 }],
    })
    expect(res.status).toBe(400)
    const body = (await res.json()) as { detail: string }
    expect(body.detail).toContain('colour')
    expect(body.detail).toContain('entitlements_catalog.0.weight')
  })

  it('refuses unknown query parameters on admin lists', async () => {
    const res = await d.admin('/v1/admin/licenses?limit=5&colour=red')
    expect(res.status).toBe(400)
    expect(((await res.json()) as { detail: string }).detail).toContain('colour')
    expect((await d.admin('/v1/admin/licenses?limit=5')).status).toBe(200)
  })

  it('applies to every /v1/admin method through the pipeline, and not to buyer methods', () => {
    const refuse = () => parseInput(methodDef('licAdminUpdateDiscount'), { id: 'x', note: 'n', bogus: 1 })
    expect(refuse).toThrow(ApiError)
    expect(refuse).toThrow(/bogus/)
    // Keysat clients send extra fields to buyer endpoints; those stay lenient.
    expect(parseInput(methodDef('licValidate'), { key: 'LIC1-A-B', sdk_version: '1' })).toMatchObject({
      key: 'LIC1-A-B',
    })
  })

  it('ignores keys whose value is undefined (IPC callers leave optional fields unset that way)', () => {
    expect(parseInput(methodDef('licAdminLicenses'), { q: undefined, limit: 10 })).toMatchObject({ limit: 10 })
  })
})
