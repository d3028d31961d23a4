import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AccessLicenseRow } from '../../../src-main/contract/licensing'
import { ConsumerKeys } from '../../../src-main/gateway/keys/consumerKeyStore'
import { AccessReport } from '../../../src-main/licensing/accessReport'
import { accessTier, chatAs, issueAccess, startAccessRig, type AccessRig } from './accessRig'

/**
 * Issue 45 at scale: 1,000 access licenses, each key with usage. The admin's key list and
 * GET /v1/admin/access are paged with a cap, and the report and GET /v1/usage read a constant
 * number of SQL statements however many licenses there are (no query per license).
 */
const LICENSES = 1000
let rig: AccessRig
const sold: { id: string; secret: string }[] = []

/** Runs `work` over `items`, `width` at a time. */
async function eachAtOnce<T>(items: readonly T[], width: number, work: (item: T, i: number) => Promise<void>) {
  let next = 0
  const lane = async () => {
    while (next < items.length) {
      const i = next++
      await work(items[i]!, i)
    }
  }
  await Promise.all(Array.from({ length: width }, lane))
}

/** SQL statements run, on any database, while `fn` runs (synchronously: nothing else runs meanwhile). */
const statementProto = (() => {
  const db = new Database(':memory:')
  const proto = Object.getPrototypeOf(db.prepare('SELECT 1')) as Record<string, (...a: unknown[]) => unknown>
  db.close()
  return proto
})()
let counting = false
let statements = 0
const originals = new Map<string, (...a: unknown[]) => unknown>()

/** Counts the statements each call of `cls.prototype[method]` runs; the counts in call order. */
function countStatementsOf<C extends { prototype: object }>(cls: C, method: keyof C['prototype'] & string) {
  const proto = cls.prototype as Record<string, (...a: unknown[]) => unknown>
  const original = proto[method]!
  const counts: number[] = []
  proto[method] = function (this: unknown, ...args: unknown[]) {
    const outer = counting
    counting = true
    statements = 0
    try {
      return original.apply(this, args)
    } finally {
      counts.push(statements)
      counting = outer
    }
  }
  return { counts, restore: () => (proto[method] = original) }
}

beforeAll(async () => {
  for (const m of ['run', 'get', 'all', 'iterate']) {
    const original = statementProto[m]!
    originals.set(m, original)
    statementProto[m] = function (this: unknown, ...args: unknown[]) {
      if (counting) statements++
      return original.apply(this, args)
    }
  }
  rig = await startAccessRig('tandem-access-scale-')
}, 60_000)
afterAll(async () => {
  for (const [m, original] of originals) statementProto[m] = original
  await rig.stop()
})

interface AccessPage {
  total: number
  licenses: AccessLicenseRow[]
  totals: { licenses: number; tokens_sold: number; tokens_used: number }
  top_consumers: AccessLicenseRow[]
}

async function json<T>(res: Response): Promise<T> {
  expect(res.status).toBe(200)
  return (await res.json()) as T
}

/** `n` licenses issued on `tier`, each key chatting once so that each has usage. */
async function sell(n: number, tier: { productId: string; tierId: string }, from: number): Promise<void> {
  await eachAtOnce(
    Array.from({ length: n }, (_, i) => from + i),
    8,
    async (i) => {
      const lic = await issueAccess(rig, tier, `buyer${i}@example.com`)
      const res = await chatAs(rig, lic.secret)
      expect(res.status).toBe(200)
      await res.arrayBuffer()
      sold.push({ id: lic.id, secret: lic.secret })
    },
  )
}

describe('1,000 access licenses with usage', () => {
  it('the report and /v1/usage read as many SQL statements for 10 licenses as for 1,000', async () => {
    const tier = await accessTier(rig, 'scale', { tokens_per_period: 1_000_000 })
    const report = countStatementsOf(AccessReport, 'report')
    const usage = countStatementsOf(ConsumerKeys, 'periodUsage')
    try {
      await sell(10, tier, 0)
      await json(await rig.daemon.admin('/v1/admin/access'))
      await json(await fetch(`${rig.daemon.url}/v1/usage`, { headers: { authorization: `Bearer ${sold[0]!.secret}` } }))
      await sell(LICENSES - 10, tier, 10)
      await json(await rig.daemon.admin('/v1/admin/access'))
      const last = sold[sold.length - 1]!.secret
      await json(await fetch(`${rig.daemon.url}/v1/usage`, { headers: { authorization: `Bearer ${last}` } }))
      expect(report.counts).toHaveLength(2)
      expect(report.counts[1]).toBe(report.counts[0])
      expect(report.counts[1]).toBeLessThanOrEqual(10)
      expect(usage.counts).toHaveLength(2)
      expect(usage.counts[1]).toBe(usage.counts[0])
      expect(usage.counts[1]).toBeLessThanOrEqual(5)
    } finally {
      report.restore()
      usage.restore()
    }
  }, 180_000)

  it('GET /v1/admin/access pages all 1,000 (most used first) with totals that /v1/usage agrees with, and caps the limit', async () => {
    const used = new Map<string, number>()
    await eachAtOnce(sold, 8, async (s) => {
      const u = await json<{ license_id: string; tokens: { used: number } }>(
        await fetch(`${rig.daemon.url}/v1/usage`, { headers: { authorization: `Bearer ${s.secret}` } }),
      )
      expect(u.license_id).toBe(s.id)
      expect(u.tokens.used).toBeGreaterThan(0)
      used.set(s.id, u.tokens.used)
    })
    const rows: AccessLicenseRow[] = []
    for (let offset = 0; offset < LICENSES; offset += 300) {
      const page = await json<AccessPage>(await rig.daemon.admin(`/v1/admin/access?limit=300&offset=${offset}`))
      expect(page.total).toBe(LICENSES)
      expect(page.licenses).toHaveLength(Math.min(300, LICENSES - offset))
      expect(page.top_consumers).toHaveLength(5)
      rows.push(...page.licenses)
      if (offset === 0)
        expect(page.totals).toMatchObject({
          licenses: LICENSES,
          tokens_sold: LICENSES * 1_000_000,
          tokens_used: [...used.values()].reduce((n, t) => n + t, 0),
        })
    }
    expect(new Set(rows.map((r) => r.license_id)).size).toBe(LICENSES)
    for (const r of rows) expect(r.tokens_used).toBe(used.get(r.license_id))
    for (let i = 1; i < rows.length; i++) expect(rows[i - 1]!.tokens_used).toBeGreaterThanOrEqual(rows[i]!.tokens_used)
    expect((await rig.daemon.admin('/v1/admin/access?limit=501')).status).toBe(400)
  })

  it("the admin's key list is paged (limit and offset honoured, the limit capped) and counts every key", async () => {
    interface KeyPage {
      total: number
      keys: { id: string; license_id: string | null }[]
    }
    const first = await json<KeyPage>(await rig.daemon.admin('/api/consumer-keys'))
    expect(first.total).toBe(LICENSES)
    expect(first.keys).toHaveLength(100)
    const ids: string[] = []
    for (let offset = 0; offset < LICENSES; offset += 500) {
      const page = await json<KeyPage>(await rig.daemon.admin(`/api/consumer-keys?limit=500&offset=${offset}`))
      expect(page.total).toBe(LICENSES)
      ids.push(...page.keys.map((k) => k.id))
    }
    expect(ids).toHaveLength(LICENSES)
    expect(new Set(ids).size).toBe(LICENSES)
    expect(ids.slice(0, 100)).toEqual(first.keys.map((k) => k.id))
    const tail = await json<KeyPage>(await rig.daemon.admin(`/api/consumer-keys?limit=10&offset=${LICENSES - 3}`))
    expect(tail.keys.map((k) => k.id)).toEqual(ids.slice(LICENSES - 3))
    const over = await rig.daemon.admin('/api/consumer-keys?limit=501')
    expect(over.status).toBe(400)
    expect(await over.text()).toContain('limit')
  })
})
