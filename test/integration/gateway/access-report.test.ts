import { spawnSync } from 'node:child_process'
import parsePrometheusTextFormat from 'parse-prometheus-text-format'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AccessLicenseRow, AccessModelRevenue, AccessTotals } from '../../../src-main/contract/licensing'
import { ACCESS_MODEL, accessTier, chatAs, issueAccess, startAccessRig, type AccessRig } from './accessRig'

/** The operator's view of the access licenses over HTTP, and the same counters by tier on /metrics (issue 45). */
let rig: AccessRig

beforeAll(async () => {
  rig = await startAccessRig('tandem-access-view-')
})
afterAll(async () => {
  await rig.stop()
})

async function chat(secret: string): Promise<void> {
  const res = await chatAs(rig, secret)
  expect(res.status).toBe(200)
  await res.arrayBuffer()
}

/** Waits until the key's usage (as /v1/usage counts it) reaches `chats` requests. */
async function counted(secret: string, chats: number): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${rig.daemon.url}/v1/usage`, { headers: { authorization: `Bearer ${secret}` } })
    const u = (await res.json()) as { tokens: { used: number }; models: { requests: number }[] }
    if (u.models.reduce((n, m) => n + m.requests, 0) >= chats) return u.tokens.used
    await new Promise((r) => setTimeout(r, 20))
  }
  throw new Error('usage never counted')
}

interface AccessView {
  total: number
  licenses: AccessLicenseRow[]
  totals: AccessTotals
  revenue: AccessModelRevenue[]
  top_consumers: AccessLicenseRow[]
}

describe('GET /v1/admin/access', () => {
  it('shows each access license against its quota, most used first, with totals, and /metrics by tier', async () => {
    const tier = await accessTier(rig, 'gpu', { tokens_per_period: 100_000 })
    const big = await issueAccess(rig, tier, 'big@example.com')
    const small = await issueAccess(rig, tier, 'small@example.com')
    for (let i = 0; i < 3; i++) await chat(big.secret)
    await chat(small.secret)
    const bigUsed = await counted(big.secret, 3)
    const smallUsed = await counted(small.secret, 1)
    expect(bigUsed).toBeGreaterThan(smallUsed)

    const res = await rig.daemon.admin('/v1/admin/access?limit=10')
    expect(res.status).toBe(200)
    const view = (await res.json()) as AccessView
    expect(view.total).toBe(2)
    expect(view.licenses.map((l) => l.license_id)).toEqual([big.id, small.id])
    expect(view.licenses[0]).toMatchObject({
      product_slug: 'gpu',
      tier_slug: 'api',
      buyer_email: 'big@example.com',
      tokens_allowed: 100_000,
      tokens_used: bigUsed,
      tokens_remaining: 100_000 - bigUsed,
    })
    expect(view.totals).toMatchObject({ licenses: 2, tokens_sold: 200_000, tokens_used: bigUsed + smallUsed })
    expect(view.revenue).toEqual([{ model: ACCESS_MODEL, tokens: bigUsed + smallUsed, requests: 4, revenue_sats: 0 }])
    expect(view.top_consumers[0]!.license_id).toBe(big.id)

    const text = await (await rig.daemon.admin('/metrics')).text()
    const family = (name: string) => parsePrometheusTextFormat(text).find((f) => f.name === name)
    const sample = (name: string) => family(name)?.metrics.find((m) => m.labels?.product === 'gpu')
    expect(sample('tandem_access_tokens_used')).toEqual({
      labels: { product: 'gpu', tier: 'api' },
      value: String(bigUsed + smallUsed),
    })
    expect(sample('tandem_access_tokens_sold')?.value).toBe('200000')
    expect(sample('tandem_access_licenses')?.value).toBe('2')
    // By tier, never by buyer: no license id or e-mail reaches /metrics.
    expect(text).not.toContain('big@example.com')
    expect(text).not.toContain(big.id)
    const promtool = spawnSync('promtool', ['check', 'metrics'], {
      input:
        text
          .split('\n')
          .filter((l) => l.includes('tandem_access_'))
          .join('\n') + '\n',
      encoding: 'utf8',
    })
    if (promtool.error === undefined) expect(`${promtool.stdout}${promtool.stderr}`.trim()).toBe('')
  })

  it('pages and refuses a bad limit with 400', async () => {
    const page = (await (await rig.daemon.admin('/v1/admin/access?limit=1&offset=1')).json()) as AccessView
    expect(page.total).toBe(2)
    expect(page.licenses).toHaveLength(1)
    expect(page.top_consumers).toHaveLength(2)
    expect((await rig.daemon.admin('/v1/admin/access?limit=0')).status).toBe(400)
  })
})
