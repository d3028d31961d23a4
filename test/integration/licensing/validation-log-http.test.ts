import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'

let d: TestDaemon
// The heartbeat limit refills with time: the daemon's clock moves only when the test says.
const clock = new ManualClock(Date.UTC(2026, 10, 23, 12))
let key = ''
let licenseId = ''
const UA = 'keysat-go/1.2 (integration test)'

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(d.url + path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'User-Agent': UA, ...headers },
    body: JSON.stringify(body),
  })
const admin = async (path: string, method = 'GET', body?: unknown, headers: Record<string, string> = {}) => {
  const res = await d.admin(path, {
    method,
    headers: { 'User-Agent': 'operator-script/3', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json()) as unknown }
}

beforeAll(async () => {
  d = await startDaemon({ env: { LICENSING_RATE_LIMIT: '0' }, clock })
  const p = (await admin('/v1/admin/products', 'POST', { slug: 'vlog', name: 'Vlog', price_value: 100 })).body as {
    id: string
  }
  await admin(`/v1/admin/products/${p.id}/policies`, 'POST', { slug: 'team', name: 'Team', max_machines: 5 })
  const issued = (await admin('/v1/admin/licenses', 'POST', { product_id: p.id })).body as {
    license: { id: string }
    license_key: string
  }
  key = issued.license_key
  licenseId = issued.license.id
})
afterAll(async () => {
  await d?.stop()
})

describe('validation log over HTTP', () => {
  it('records validate, activate, heartbeat and deactivate with the caller, for the license detail', async () => {
    expect(await (await post('/v1/validate', { key, product_slug: 'vlog' })).json()).toMatchObject({ ok: true })
    expect(await (await post('/v1/validate', { key: 'LIC1-AAAA-BBBB' })).json()).toMatchObject({ ok: false })
    expect(await (await post('/v1/machines/activate', { key, fingerprint: 'box-1' })).json()).toMatchObject({
      ok: true,
    })
    expect(await (await post('/v1/machines/heartbeat', { key, fingerprint: 'box-1' })).json()).toMatchObject({
      ok: true,
    })
    expect((await post('/v1/machines/heartbeat', { key: 'LIC1-AAAA-BBBB', fingerprint: 'box-1' })).status).toBe(401)
    expect(await (await post('/v1/machines/deactivate', { key, fingerprint: 'box-1' })).json()).toMatchObject({
      ok: true,
    })
    const mine = (await admin(`/v1/admin/validations?license_id=${licenseId}`)).body as Record<string, unknown>[]
    expect(mine.map((r) => [r.kind, r.result])).toEqual([
      ['deactivate', 'ok'],
      ['heartbeat', 'ok'],
      ['activate', 'ok'],
      ['validate', 'ok'],
    ])
    for (const r of mine) expect(r).toMatchObject({ client_ip: '127.0.0.1', user_agent: UA, key_hash: null })
    const refused = (await admin('/v1/admin/validations?ok=false')).body as Record<string, unknown>[]
    expect(refused.map((r) => [r.kind, r.result, r.license_id])).toEqual([
      ['heartbeat', 'bad_format', null],
      ['validate', 'bad_format', null],
    ])
    expect(refused[0]!.key_hash).toMatch(/^[0-9a-f]{32}$/)
    const daily = (await admin('/v1/admin/validations/daily?days=7')).body as {
      rows: { kind: string; count: number }[]
    }
    expect(daily.rows.reduce((n, r) => n + r.count, 0)).toBe(6)
  })

  it('answers the 61st heartbeat in a minute for one license with rate_limited', async () => {
    await post('/v1/machines/activate', { key, fingerprint: 'box-2' })
    let ok = 0
    let last: unknown = null
    for (let i = 0; i < 61; i++) {
      const res = await post('/v1/machines/heartbeat', { key, fingerprint: 'box-2' })
      expect(res.status).toBe(200)
      last = await res.json()
      if ((last as { ok: boolean }).ok) ok++
    }
    // 60 in the bucket, less the one spent by the earlier test.
    expect(ok).toBe(59)
    expect(last).toEqual({ ok: false, reason: 'rate_limited' })
    clock.advance(1_000)
    expect(await (await post('/v1/machines/heartbeat', { key, fingerprint: 'box-2' })).json()).toMatchObject({
      ok: true,
    })
  })

  it('puts the client address, user agent and transport on admin and buyer audit entries', async () => {
    // A buyer action through an HTML page (not a contract method) is attributed the same way.
    const page = await fetch(`${d.url}/recover`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'User-Agent': 'Mozilla/5.0 (page)' },
      body: new URLSearchParams({ key }).toString(),
    })
    expect(page.status).toBe(200)
    await admin(`/v1/admin/licenses/${licenseId}/suspend`, 'POST', { reason: 'audit test' })
    await admin(`/v1/admin/licenses/${licenseId}/reinstate`, 'POST', {})
    const audit = (await admin('/v1/admin/audit?limit=200')).body as Record<string, unknown>[]
    expect(audit.find((e) => e.action === 'license.suspend')).toMatchObject({
      actor: 'admin',
      via: 'http',
      client_ip: '127.0.0.1',
      user_agent: 'operator-script/3',
    })
    expect(audit.find((e) => e.action === 'license.recover')).toMatchObject({
      actor: 'buyer',
      via: 'http',
      client_ip: '127.0.0.1',
      user_agent: 'Mozilla/5.0 (page)',
    })
    expect(audit.find((e) => e.action === 'machine.activate')).toMatchObject({
      actor: 'buyer',
      via: 'http',
      client_ip: '127.0.0.1',
      user_agent: UA,
    })
  })
})
