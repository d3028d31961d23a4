import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDaemon, type TestDaemon } from '../helpers/daemon'
import { answerOf, badAnswer, hostileStrings, shown, type Answer } from './hostile'
import { clientAddresses } from './routes'

/**
 * The hostile-input corpus through the licensing shop: the admin API (product and tier names,
 * slugs, discount codes, buyer emails and notes, searches, URLs) and the buyer API. Each string is
 * refused with a clear 400, or accepted and stored as data: the row it wrote reads back byte for
 * byte (SQL only ever binds it), a search for it finds only rows that hold it, and the tables
 * are all still there at the end.
 */
let d: TestDaemon
let dataDir: string
let strings: string[]
let productId: string
const client = clientAddresses()
const enc = encodeURIComponent

const admin = async (pathname: string, method = 'GET', body?: unknown): Promise<Answer> =>
  answerOf(await d.admin(pathname, { method, body: body === undefined ? undefined : JSON.stringify(body) }))
/** A buyer's call, each from its own address so the per-address limits never answer for it. */
const buyer = async (pathname: string, method = 'GET', body?: unknown): Promise<Answer> =>
  answerOf(
    await fetch(d.url + pathname, {
      method,
      headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': client() },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  )

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-hostile-lic-'))
  strings = hostileStrings(path.join(dataDir, `pwned-${crypto.randomBytes(6).toString('hex')}`))
  d = await startDaemon({ env: { TRUSTED_PROXIES: '127.0.0.1', LICENSING_RATE_LIMIT: '0' }, dataDir })
  const p = await admin('/v1/admin/products', 'POST', { slug: 'hostile-base', name: 'Base', price_value: 1000 })
  expect(p.status, p.text).toBe(200)
  productId = (p.body as { id: string }).id
  const t = await admin(`/v1/admin/products/${productId}/policies`, 'POST', { slug: 'base-tier', name: 'Base tier' })
  expect(t.status, t.text).toBe(200)
})
afterAll(async () => {
  await d?.stop()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

/** Runs `fn` over the corpus, `width` strings at a time, and returns every problem it reported. */
async function overCorpus(width: number, fn: (s: string, i: number) => Promise<string | null>): Promise<string[]> {
  const problems: string[] = []
  let next = 0
  const worker = async (): Promise<void> => {
    for (let i = next++; i < strings.length; i = next++) {
      const s = strings[i] as string
      const problem = await fn(s, i)
      if (problem) problems.push(`${shown(s)}: ${problem}`)
    }
  }
  await Promise.all(Array.from({ length: width }, worker))
  return problems
}

/** A refusal must be a clear 400; anything else besides 2xx and `accepted` is a problem. Null when fine. */
const judge = (a: Answer, accepted: readonly number[] = []): string | null => badAnswer(a, accepted)
const ok = (a: Answer): boolean => a.status >= 200 && a.status < 300

/** Which of `fields` of `row` differ from `want`, byte for byte. */
function differs(row: Record<string, unknown> | undefined, want: Record<string, unknown>): string | null {
  if (!row) return 'the row is gone'
  const wrong = Object.keys(want).filter((k) => row[k] !== want[k])
  return wrong.length === 0
    ? null
    : `read back differently: ${wrong.map((k) => `${k}=${shown(String(row[k]))}`).join(', ')}`
}

// Each test walks the whole corpus: minutes on a loaded machine, not the default 30 s.
describe('the hostile-input corpus against the licensing shop', { timeout: 180_000 }, () => {
  it('product names and descriptions: refused, or stored and read back byte for byte', async () => {
    const problems = await overCorpus(4, async (s, i) => {
      let a = await admin('/v1/admin/products', 'POST', { slug: `hp-${i}`, name: s, description: s })
      let want: Record<string, unknown> = { name: s, description: s }
      if (a.status === 400) {
        // Blank or too long for a name: the description alone must still be carried, or refused clearly.
        a = await admin('/v1/admin/products', 'POST', { slug: `hp-${i}`, name: 'P', description: s })
        want = { description: s }
      }
      if (!ok(a)) return judge(a)
      const got = await admin(`/v1/admin/products/${(a.body as { id: string }).id}`)
      return differs((got.body as { product?: Record<string, unknown> }).product, want)
    })
    expect(problems).toEqual([])
  })

  it('product slugs: refused, or stored as written', async () => {
    const problems = await overCorpus(4, async (s) => {
      const a = await admin('/v1/admin/products', 'POST', { slug: s, name: 'P' })
      return ok(a) ? differs(a.body as Record<string, unknown>, { slug: s }) : judge(a, [409])
    })
    expect(problems).toEqual([])
  })

  it('tier names and descriptions: refused, or stored and read back byte for byte', async () => {
    const problems = await overCorpus(4, async (s, i) => {
      const a = await admin(`/v1/admin/products/${productId}/policies`, 'POST', {
        slug: `ht-${i}`,
        name: s.length > 0 && s.length <= 200 ? s : 'T',
        description: s.length <= 5000 ? s : '',
      })
      if (!ok(a)) return judge(a)
      const id = (a.body as { id: string }).id
      const got = await admin(`/v1/admin/products/${productId}`)
      const row = (got.body as { policies: Record<string, unknown>[] }).policies.find((p) => p.id === id)
      return differs(row, {
        name: s.length > 0 && s.length <= 200 ? s : 'T',
        description: s.length <= 5000 ? s : '',
      })
    })
    expect(problems).toEqual([])
  })

  it('discount codes and notes: refused, or stored and read back byte for byte', async () => {
    const problems = await overCorpus(4, async (s, i) => {
      const asCode = await admin('/v1/admin/discount-codes', 'POST', { code: s, kind: 'percent', value: 10 })
      const codeProblem = ok(asCode)
        ? differs(asCode.body as Record<string, unknown>, { code: s })
        : judge(asCode, [409])
      if (codeProblem) return `as a code: ${codeProblem}`
      const asNote = await admin('/v1/admin/discount-codes', 'POST', {
        code: `hd-${i}`,
        kind: 'percent',
        value: 10,
        note: s,
      })
      if (!ok(asNote)) return judge(asNote)
      const list = await admin(`/v1/admin/discount-codes?q=hd-${i}`)
      const row = (list.body as { discounts: Record<string, unknown>[] }).discounts.find((x) => x.code === `hd-${i}`)
      return differs(row, { note: s })
    })
    expect(problems).toEqual([])
  })

  it('buyer emails and notes on a license: refused, or stored and read back byte for byte', async () => {
    const problems = await overCorpus(4, async (s) => {
      const asEmail = await admin('/v1/admin/licenses', 'POST', { product_id: productId, buyer_email: s })
      if (!ok(asEmail)) {
        const bad = judge(asEmail)
        if (bad) return `as an email: ${bad}`
      }
      const asNote = await admin('/v1/admin/licenses', 'POST', { product_id: productId, buyer_note: s })
      if (!ok(asNote)) return judge(asNote)
      const id = (asNote.body as { license: { id: string } }).license.id
      const got = await admin(`/v1/admin/licenses/${id}`)
      return differs((got.body as { license?: Record<string, unknown> }).license, { buyer_note: s })
    })
    expect(problems).toEqual([])
  })

  it('searches: refused, or find only rows that hold the text (a bound LIKE, not SQL)', async () => {
    const fieldsOf = (row: Record<string, unknown>): string =>
      Object.values(row)
        .filter((v) => typeof v === 'string')
        .join('\u0000')
        .toLowerCase()
    const problems = await overCorpus(4, async (s) => {
      for (const [list, key] of [
        ['licenses', 'licenses'],
        ['products', 'products'],
        ['discount-codes', 'discounts'],
      ] as const) {
        const a = await admin(`/v1/admin/${list}?q=${enc(s)}&limit=500`)
        if (!ok(a)) {
          const bad = judge(a, [414, 431])
          if (bad) return `${list}: ${bad}`
          continue
        }
        const q = s.trim().toLowerCase()
        if (q === '') continue
        const rows = (a.body as Record<string, Record<string, unknown>[]>)[key] ?? []
        const stray = rows.find((r) => !fieldsOf(r).includes(q))
        if (stray) return `${list}: found a row without the text: ${JSON.stringify(stray).slice(0, 160)}`
      }
      return null
    })
    expect(problems).toEqual([])
  })

  it('ids in admin paths: refused or not found, never a crash', async () => {
    const problems = await overCorpus(6, async (s) => {
      for (const p of [`/v1/admin/products/${enc(s)}`, `/v1/admin/licenses/${enc(s)}/key`]) {
        const bad = judge(await admin(p), [404, 414, 431])
        if (bad) return `${p.slice(0, 30)}: ${bad}`
      }
      return null
    })
    expect(problems).toEqual([])
  })

  it('return URL prefixes and webhook URLs: refused, or stored as written (no user@host, no other scheme)', async () => {
    const problems = await overCorpus(1, async (s) => {
      const patch = await admin(`/v1/admin/products/${productId}`, 'PATCH', { return_url_prefix: s })
      if (ok(patch)) {
        const url = new URL(s)
        if (!/^https?:$/.test(url.protocol) || url.username !== '') return `return_url_prefix accepted ${url.href}`
        const diff = differs(
          (patch.body as { product?: Record<string, unknown> }).product ?? (patch.body as Record<string, unknown>),
          { return_url_prefix: s },
        )
        if (diff) return diff
      } else if (judge(patch)) return `return_url_prefix: ${judge(patch)}`
      // Inactive: nothing is ever delivered to an accepted URL.
      const hook = await admin('/v1/admin/webhook-endpoints', 'POST', { url: s, secret: 's'.repeat(24), active: false })
      if (!ok(hook)) return judge(hook)
      const id = (hook.body as { id: string }).id
      const url = new URL(s)
      await admin(`/v1/admin/webhook-endpoints/${id}`, 'DELETE')
      if (!/^https?:$/.test(url.protocol)) return `webhook accepted ${url.href}`
      // A password in the URL is shown masked, never as written.
      const shownUrl = (hook.body as { url: string }).url
      if (url.password !== '') return shownUrl.includes(url.password) ? `shows the URL's password: ${shownUrl}` : null
      return differs(hook.body as Record<string, unknown>, { url: s })
    })
    await admin(`/v1/admin/products/${productId}`, 'PATCH', { return_url_prefix: null })
    expect(problems).toEqual([])
  })

  it('buyer API (redeem, recover, validate, discount preview, product pages): refused clearly or answered', async () => {
    const uuid = '3f2b8c1e-4d5a-4b6c-8d7e-9f0a1b2c3d4e'
    const calls = (s: string): [string, Promise<Answer>][] => [
      ['redeem', buyer('/v1/redeem', 'POST', { product: 'hostile-base', code: s })],
      ['recover', buyer('/v1/recover', 'POST', { invoice_id: uuid, email: s })],
      ['recover by key', buyer('/v1/recover', 'POST', { license_key: s })],
      [
        'validate',
        buyer('/v1/validate', 'POST', { key: s, product_slug: s, fingerprint: s, hostname: s, platform: s }),
      ],
      ['preview', buyer('/v1/discount-codes/preview', 'POST', { product: 'hostile-base', code: s })],
      ['product page', buyer(`/v1/products/${enc(s)}`)],
      ['purchase status', buyer(`/v1/purchase/${enc(s)}`)],
    ]
    const problems = await overCorpus(2, async (s) => {
      for (const [what, pending] of calls(s)) {
        const bad = judge(await pending, [401, 403, 404, 409, 410, 414, 422, 431])
        if (bad) return `${what}: ${bad}`
      }
      return null
    })
    expect(problems).toEqual([])
  })

  it('every table is still there and whole: the base product, its tier and the stored rows', async () => {
    const p = await admin(`/v1/admin/products/${productId}`)
    expect(p.status).toBe(200)
    expect((p.body as { policies: { slug: string }[] }).policies.map((x) => x.slug)).toContain('base-tier')
    const products = (await admin('/v1/admin/products?limit=500')).body as { total: number }
    expect(products.total).toBeGreaterThan(strings.length / 2)
    const licenses = (await admin('/v1/admin/licenses?limit=1')).body as { total: number }
    expect(licenses.total).toBeGreaterThan(strings.length / 2)
  })
})
