import { describe, expect, it } from 'vitest'
import { PolicyInput, PolicyPatch, ProductInput } from '../../../src-main/contract/licensing'
import { licensingFixture } from './fixture'

function setup() {
  const f = licensingFixture()
  const p = f.catalog.createProduct(ProductInput.parse({ slug: 'cluster', name: 'Cluster', price_value: 1000 }))
  return { f, productId: p.id }
}

describe('a tier’s access entitlements', () => {
  it('are stored with the tier and shown in its view, limits left out as none', () => {
    const { f, productId } = setup()
    const input = PolicyInput.parse({
      slug: 'basic',
      name: 'Basic',
      access: { models: ['llm', 'org/model-7b'], tokens_per_period: 1_000_000, requests_per_minute: 30 },
    })
    const created = f.catalog.createPolicy(productId, input)
    expect(created.access).toEqual({
      models: ['llm', 'org/model-7b'],
      tokens_per_period: 1_000_000,
      requests_per_minute: 30,
      concurrent_streams: null,
      top_up: null,
      audio_minutes_per_period: null,
    })
    expect(f.catalog.getPolicy(created.id).access).toEqual(created.access)
  })

  it('default to none, and a tier without access reads null', () => {
    const { f, productId } = setup()
    const created = f.catalog.createPolicy(productId, PolicyInput.parse({ slug: 'plain', name: 'Plain' }))
    expect(created.access).toBeNull()
    expect(f.catalog.listPolicies(productId).every((p) => p.access === null)).toBe(true)
  })

  it('are replaced by a patch, kept by a patch that leaves them out, and cleared by null', () => {
    const { f, productId } = setup()
    const id = f.catalog.createPolicy(
      productId,
      PolicyInput.parse({ slug: 't', name: 'T', access: { tokens_per_period: 500 } }),
    ).id
    const renamed = f.catalog.updatePolicy(id, PolicyPatch.parse({ name: 'T2' }))
    expect(renamed.access).toMatchObject({ models: null, tokens_per_period: 500 })
    const changed = f.catalog.updatePolicy(id, PolicyPatch.parse({ access: { concurrent_streams: 2 } }))
    expect(changed.access).toEqual({
      models: null,
      tokens_per_period: null,
      requests_per_minute: null,
      concurrent_streams: 2,
      top_up: null,
      audio_minutes_per_period: null,
    })
    expect(f.catalog.updatePolicy(id, PolicyPatch.parse({ access: null })).access).toBeNull()
  })

  it('refuse unknown fields, zero or fractional limits and an empty model list', () => {
    const bad = [
      { tokens_per_period: 0 },
      { requests_per_minute: 1.5 },
      { audio_minutes_per_period: 0 },
      { audio_minutes_per_period: 1.5 },
      { audio_minutes_per_period: -1 },
      { models: [] },
      { models: ['bad model'] },
      { tokens: 10 },
    ]
    for (const access of bad)
      expect(PolicyInput.safeParse({ slug: 'x', name: 'X', access }).success, JSON.stringify(access)).toBe(false)
  })

  it('read as none when the stored JSON is damaged', () => {
    const { f, productId } = setup()
    const id = f.catalog.createPolicy(productId, PolicyInput.parse({ slug: 'd', name: 'D', access: {} })).id
    f.db.prepare('UPDATE policies SET access = ? WHERE id = ?').run('{not json', id)
    expect(f.catalog.getPolicy(id).access).toBeNull()
  })
})
