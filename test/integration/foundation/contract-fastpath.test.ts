import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/core/clock'
import { createFastPath } from '../../../src-main/http/fastPath'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { exchange, rawCase, type RawCase } from '../../helpers/rawExchange'

/**
 * Contract calls on the fast path (fixed POST routes of unguarded surfaces, dispatched before the
 * router) against the router (GATEWAY_FAST_PATH=off): two daemons on copies of one data directory
 * and one clock reading get the same requests in the same order, and must answer alike, byte for
 * byte (Date, session values and new machine ids aside), and record the same validation log.
 */

const AT = Date.UTC(2026, 5, 1)

type Case = RawCase

/** A deterministic mix of buyer, login and edge cases, from 24 client addresses. */
function makeCases(n: number, keys: string[], adminToken: string): Case[] {
  let seed = 7
  const r = (): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed / 2147483648
  }
  const key = (): string => keys[Math.floor(r() * keys.length)]!
  const out: Case[] = []
  for (let i = 0; i < n; i++) {
    const roll = r()
    let p = '/v1/validate'
    let text: string
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-forwarded-for': `198.51.100.${i % 24}`,
    }
    if (roll < 0.3) text = JSON.stringify({ key: key(), product_slug: 'notes' })
    else if (roll < 0.35) text = JSON.stringify({ key: key(), product_slug: 'other' })
    else if (roll < 0.4) text = JSON.stringify({ key: 'LIC1-not-a-key', product_slug: 'notes' })
    else if (roll < 0.45) text = JSON.stringify({ key: key().slice(0, -3) + 'AAA' })
    else if (roll < 0.48) text = '{"key": '
    else if (roll < 0.5) text = '[1, 2]'
    else if (roll < 0.52) text = '['.repeat(80) + ']'.repeat(80)
    else if (roll < 0.6) text = JSON.stringify({ key: key(), fingerprint: `machine-${i % 5}`, hostname: 'box' })
    else if (roll < 0.65) {
      p = '/v1/machines/activate'
      // Without a fingerprint: a 400 (activate has no 200 refusal for bad input, unlike validate).
      text = JSON.stringify(r() < 0.2 ? { key: key() } : { key: key(), fingerprint: `machine-${i % 7}` })
    } else if (roll < 0.7) {
      p = '/v1/machines/heartbeat'
      text = JSON.stringify({ key: key(), fingerprint: `machine-${i % 7}` })
    } else if (roll < 0.74) {
      p = '/v1/discount-codes/preview'
      text = JSON.stringify({ product: 'notes', code: 'NOPE' })
    } else if (roll < 0.78) {
      p = '/api/login'
      text = JSON.stringify({ token: r() < 0.5 ? adminToken : 'not-the-token' })
    } else if (roll < 0.8) {
      p = '/api/logout'
      text = '{}'
    } else if (roll < 0.84) {
      text = JSON.stringify({ key: key() })
      headers.origin = 'https://elsewhere.example' // the buyer API is not origin-guarded
    } else if (roll < 0.87) {
      p = '/v1/validate?from=app' // not an exact fast-path URL: the router serves it on both
      text = JSON.stringify({ key: key() })
    } else if (roll < 0.88) text = JSON.stringify({ key: 'x'.repeat(300_000) }).repeat(4)
    else text = JSON.stringify({ key: key(), product_slug: 'notes', platform: 'linux' })
    out.push(rawCase(p, headers, text, r() < 0.25 && text.length > 3))
  }
  return out
}

/** Status line, headers in order (Date aside), body; session values and new machine ids masked. */
async function send(base: string, c: Case): Promise<string> {
  const a = await exchange(base, c)
  if (typeof a === 'string') return a
  return `${a.head}\n\n${a.body.toString('utf8')}${a.cut === undefined ? '' : `\nCUT ${a.cut}`}`
    .replace(/tandem_session=[^;]+;/g, 'tandem_session=SESSION;')
    .replace(/"machine_id":"[^"]+"/g, '"machine_id":"ID"')
}

/**
 * Validation log rows by kind and result, and machines by fingerprint, once the daemon has stopped.
 * Calls from 127.0.0.1 itself are the dispatch test's, made on the fast daemon only.
 */
function recorded(dataDir: string): unknown {
  const db = new Database(path.join(dataDir, 'licensing.sqlite'), { readonly: true })
  try {
    return {
      log: db
        .prepare(
          'SELECT kind, result, ok, client_ip, count(*) AS n FROM validation_log WHERE client_ip <> ? GROUP BY 1, 2, 3, 4',
        )
        .all('127.0.0.1'),
      machines: db.prepare('SELECT license_id, fingerprint_hash, status FROM machines ORDER BY 1, 2').all(),
    }
  } finally {
    db.close()
  }
}

describe('contract calls on the fast path and through the router', () => {
  const dirs: string[] = []
  const keys: string[] = []
  let stopped = false
  let fast: TestDaemon
  let routed: TestDaemon
  const env = (fastPath: string): Record<string, string> => ({
    TRUSTED_PROXIES: '127.0.0.1',
    LICENSING_RATE_LIMIT: '8',
    GATEWAY_FAST_PATH: fastPath,
  })

  beforeAll(async () => {
    const seedDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-cfp-'))
    dirs.push(seedDir)
    const seeding = await startDaemon({ dataDir: seedDir, clock: new ManualClock(AT) })
    const admin = async (p: string, body: unknown): Promise<Record<string, unknown>> => {
      const res = await seeding.admin(p, { method: 'POST', body: JSON.stringify(body) })
      expect(res.status, p).toBe(200)
      return (await res.json()) as Record<string, unknown>
    }
    const product = await admin('/v1/admin/products', { slug: 'notes', name: 'Notes', price_value: 5000 })
    const policy = await admin(`/v1/admin/products/${product.id as string}/policies`, {
      slug: 'team',
      name: 'Team',
      max_machines: 3,
    })
    for (let i = 0; i < 6; i++) {
      const issued = await admin('/v1/admin/licenses', { product_id: product.id, policy_id: policy.id })
      keys.push(issued.license_key as string)
    }
    await seeding.stop()
    const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-cfp-'))
    dirs.push(copy)
    fs.cpSync(seedDir, copy, { recursive: true })
    fast = await startDaemon({ dataDir: seedDir, clock: new ManualClock(AT + 1000), env: env('on') })
    routed = await startDaemon({ dataDir: copy, clock: new ManualClock(AT + 1000), env: env('off') })
  })
  afterAll(async () => {
    if (!stopped) {
      await fast?.stop()
      await routed?.stop()
    }
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true })
  })

  it('takes fixed POST routes of unguarded surfaces only, and answers them with the edge headers once', async () => {
    expect(createFastPath(routed.core, 0)).toBeNull()
    const fastPath = createFastPath(fast.core, 0)!
    const server = http.createServer((req, res) => {
      if (!fastPath(req, res)) res.writeHead(599).end()
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const post = (p: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> =>
      fetch(url + p, { method: 'POST', headers, body: JSON.stringify(body) })
    try {
      const valid = await post(
        '/v1/validate',
        { key: keys[0], product_slug: 'notes' },
        { origin: 'https://app.example' },
      )
      expect(valid.status).toBe(200)
      expect(await valid.json()).toMatchObject({ ok: true, product_slug: 'notes', max_machines: 3 })
      expect(valid.headers.get('x-content-type-options')).toBe('nosniff')
      expect(valid.headers.get('referrer-policy')).toBe('same-origin')
      expect(valid.headers.get('access-control-allow-origin')).toBe('*')
      expect(valid.headers.get('content-type')).toBe('application/json; charset=utf-8')
      // A call that is not a browser's (no Origin) gets no CORS headers, and no Vary: a POST's answer is not cached.
      const plain = await post('/v1/validate', { key: keys[0], product_slug: 'notes' })
      expect(plain.headers.get('x-content-type-options')).toBe('nosniff')
      expect(plain.headers.get('access-control-allow-origin')).toBeNull()
      expect(plain.headers.get('access-control-expose-headers')).toBeNull()
      expect(plain.headers.get('vary')).toBeNull()
      // Login is a contract call of the open login surface: refused here, and a cookie when right.
      expect((await post('/api/login', { token: 'wrong' }, { 'x-forwarded-for': '192.0.2.1' })).status).toBe(401)
      const login = await post('/api/login', { token: fast.adminToken })
      expect(login.status).toBe(200)
      expect(login.headers.get('set-cookie')).toMatch(
        /^tandem_session=[A-Za-z0-9_-]{43}; Max-Age=43200; Path=\/; Expires=[^;]+ GMT; HttpOnly; SameSite=Strict$/,
      )
      expect(login.headers.get('x-content-type-options')).toBe('nosniff')
      const logout = await post('/api/logout', {})
      expect(logout.headers.get('set-cookie')).toBe(
        'tandem_session=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Strict',
      )
      expect((await post('/v1/discount-codes/preview', { product: 'notes', code: 'NONE' })).status).not.toBe(599)
      for (const [method, p] of [
        ['POST', '/v1/admin/licenses'], // licensing admin: origin-guarded, the router's guard applies
        ['POST', '/api/config'], // control
        ['POST', `/v1/admin/licenses/x/revoke`],
        ['GET', '/v1/pubkey'],
        ['POST', '/v1/validate?from=app'],
        ['OPTIONS', '/v1/validate'],
        ['POST', '/v1/btcpay/webhook'], // a domain route, not a contract method
      ] as const)
        expect((await fetch(url + p, { method, body: method === 'POST' ? '{}' : undefined })).status, p).toBe(599)
    } finally {
      await new Promise((r) => server.close(r))
    }
  })

  it('answers the same 400 requests alike and records the same calls', async () => {
    const cases = makeCases(400, keys, fast.adminToken)
    expect(routed.adminToken).toBe(fast.adminToken)
    const viaFast: string[] = []
    const viaRouter: string[] = []
    // One at a time: the rate limiter and seat counts depend on the order of arrival.
    for (const c of cases) viaFast.push(await send(fast.url, c))
    for (const c of cases) viaRouter.push(await send(routed.url, c))
    for (let i = 0; i < cases.length; i++) expect(viaFast[i], `answer to request ${i}`).toBe(viaRouter[i])
    // The mix reached every kind of answer the buyer API and login give.
    const statuses = new Set(viaFast.map((s) => s.slice(0, 3)))
    for (const st of ['200', '400', '401', '404', '413', '429']) expect(statuses).toContain(st)
    const bodies = viaFast.join('\n')
    for (const reason of ['"ok":true', 'product_mismatch', 'bad_format', 'bad_signature', 'rate_limited'])
      expect(bodies).toContain(reason)
    expect(bodies).toContain('tandem_session=SESSION;')
    expect(bodies).toContain('"machine_id":"ID"')
    // Stopped first: the validation log is written out on the way down.
    stopped = true
    await fast.stop()
    await routed.stop()
    expect(recorded(dirs[0]!)).toEqual(recorded(dirs[1]!))
    expect((recorded(dirs[0]!) as { log: unknown[] }).log.length).toBeGreaterThan(5)
  }, 60_000)
})
