import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { contract } from '../../../src-main/contract'
import { splitRoute, type MethodDef } from '../../../src-main/contract/define'
import { surfaceOf } from '../../../src-main/http/surfaces'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'

/**
 * Every contract route, generated from the contract itself: without a credential 401, with a
 * wrong one 401 and counted against the address, and a state change from a foreign Origin 403.
 */
let d: TestDaemon
let nextClient = 1
const client = (): string => `203.0.113.${nextClient++}`

beforeAll(async () => {
  d = await startDaemon({ env: { TRUSTED_PROXIES: '127.0.0.1', CONSUMER_API_KEYS: 'lan-key-aaaaaaaaaaaa' } })
})
afterAll(() => d.stop())

const routes = Object.entries(contract as Record<string, MethodDef>).map(([name, def]) => {
  const { verb, path } = splitRoute(def.http)
  const url = path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, 'x1')
  return { name, verb, url, surface: surfaceOf(path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, 'x1')) }
})
const credentialed = routes.filter(
  (r) => r.surface === 'control' || r.surface === 'licensing-admin' || r.surface === 'consumer',
)
const guarded = routes.filter((r) => (r.surface === 'control' || r.surface === 'licensing-admin') && r.verb !== 'GET')

const call = (r: { verb: string; url: string }, headers: Record<string, string>) =>
  fetch(d.url + r.url, {
    method: r.verb,
    headers: { 'Content-Type': 'application/json', ...headers },
    body: r.verb === 'GET' || r.verb === 'DELETE' ? undefined : '{}',
  })

describe('every credentialed contract route', () => {
  it('covers the contract (sanity: the table is not empty)', () => {
    expect(credentialed.length).toBeGreaterThan(60)
    expect(guarded.length).toBeGreaterThan(30)
  })

  it.each(credentialed.map((r) => [r.name, r] as const))('%s: no credential 401', async (_n, r) => {
    const res = await call(r, { 'X-Forwarded-For': client() })
    expect(res.status).toBe(401)
  })

  it.each(credentialed.map((r) => [r.name, r] as const))('%s: a wrong one 401, and counted', async (_n, r) => {
    const ip = client()
    const wrong = { 'X-Forwarded-For': ip, Authorization: 'Bearer wrong-credential-123' }
    expect((await call(r, wrong)).status).toBe(401)
    for (let i = 0; i < 4; i++) await call(r, wrong)
    const right = r.surface === 'consumer' ? 'lan-key-aaaaaaaaaaaa' : d.adminToken
    const after = await call(r, { 'X-Forwarded-For': ip, Authorization: `Bearer ${right}` })
    expect(after.status).toBe(429)
  })
})

describe('every state-changing admin route', () => {
  it.each(guarded.map((r) => [r.name, r] as const))('%s: a foreign Origin 403', async (_n, r) => {
    const res = await call(r, {
      'X-Forwarded-For': client(),
      Authorization: `Bearer ${d.adminToken}`,
      Origin: 'https://evil.example',
    })
    expect(res.status).toBe(403)
  })
})
