import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'

/** A tier's access entitlements through the admin HTTP API (issue 45). */
describe('tier access over HTTP', () => {
  let d: TestDaemon
  beforeAll(async () => {
    d = await startDaemon()
  })
  afterAll(async () => d.stop())

  const send = (path: string, body: unknown, verb = 'POST') =>
    d.admin(path, { method: verb, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

  it('creates a tier with access, shows it, changes it and refuses a bad block without a change', async () => {
    const product = (await (
      await send('/v1/admin/products', { slug: 'acc-app', name: 'Acc', price_value: 500 })
    ).json()) as {
      id: string
    }
    const created = await send(`/v1/admin/products/${product.id}/policies`, {
      slug: 'gpu',
      name: 'GPU',
      access: { models: ['llm'], tokens_per_period: 100_000, concurrent_streams: 2 },
    })
    expect(created.status).toBe(200)
    const tier = (await created.json()) as { id: string; access: unknown }
    expect(tier.access).toEqual({
      models: ['llm'],
      tokens_per_period: 100_000,
      requests_per_minute: null,
      concurrent_streams: 2,
      top_up: null,
      audio_minutes_per_period: null,
    })

    const bad = await send(`/v1/admin/policies/${tier.id}`, { access: { tokens_per_period: -1 } }, 'PATCH')
    expect(bad.status).toBe(400)
    expect(((await bad.json()) as { detail: string }).detail).toContain('tokens_per_period')

    const fractional = await send(
      `/v1/admin/policies/${tier.id}`,
      { access: { audio_minutes_per_period: 2.5 } },
      'PATCH',
    )
    expect(fractional.status).toBe(400)
    expect(((await fractional.json()) as { detail: string }).detail).toContain('audio_minutes_per_period')

    const patched = await send(
      `/v1/admin/policies/${tier.id}`,
      { access: { requests_per_minute: 60, audio_minutes_per_period: 600 } },
      'PATCH',
    )
    expect(((await patched.json()) as { access: unknown }).access).toEqual({
      models: null,
      tokens_per_period: null,
      requests_per_minute: 60,
      concurrent_streams: null,
      top_up: null,
      audio_minutes_per_period: 600,
    })
    const list = (await (await d.admin(`/v1/admin/products/${product.id}/policies`)).json()) as {
      slug: string
      access: unknown
    }[]
    expect(list.find((p) => p.slug === 'gpu')?.access).toMatchObject({ requests_per_minute: 60 })
    expect(list.find((p) => p.slug === 'default')?.access).toBeNull()
  })
})
