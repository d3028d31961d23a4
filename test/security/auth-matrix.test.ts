import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDaemon, type TestDaemon } from '../helpers/daemon'
import {
  ADMIN_SURFACES,
  clientAddresses,
  contractRoutes,
  rawRequest,
  type ContractRoute,
  type RawReply,
} from './routes'

/**
 * The auth matrix: every contract route (generated from the contract, so a new method is covered
 * the day it is added) called with every kind of credential against the real daemon on 127.0.0.1.
 * Admin routes answer every non-admin credential 401 and never reach their handler; public routes
 * answer the same whoever calls; the consumer key passes the consumer surface and nothing else; a
 * state change from a foreign Origin is refused even with the admin's cookie. The body is `{}` and
 * path parameters are valid dummies, so a route that checked its input before the caller would
 * answer 400 or 404 where 401 is expected.
 */
let d: TestDaemon
let consumerKey: string
let adminCookie: string
const client = clientAddresses()

const CREDENTIALS = ['none', 'wrong-token', 'garbage-cookie', 'consumer-key', 'admin-token', 'admin-cookie'] as const
type Credential = (typeof CREDENTIALS)[number]
const NON_ADMIN: readonly Credential[] = ['none', 'wrong-token', 'garbage-cookie', 'consumer-key']
const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

async function login(): Promise<string> {
  const res = await fetch(`${d.url}/api/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': client() },
    body: JSON.stringify({ token: d.adminToken }),
  })
  expect(res.status).toBe(200)
  return (res.headers.get('set-cookie') ?? '').split(';')[0] as string
}

function headersFor(credential: Credential, cookie: string): Record<string, string> {
  switch (credential) {
    case 'none':
      return {}
    case 'wrong-token':
      return { Authorization: 'Bearer not-the-admin-token-0123456789' }
    case 'garbage-cookie':
      return { Cookie: 'tandem_session=%00garbage.session.value%ff; other=1' }
    case 'consumer-key':
      return { Authorization: `Bearer ${consumerKey}` }
    case 'admin-token':
      return { Authorization: `Bearer ${d.adminToken}` }
    case 'admin-cookie':
      return { Cookie: cookie }
  }
}

async function call(r: ContractRoute, headers: Record<string, string>): Promise<RawReply> {
  const hasBody = STATE_CHANGING.has(r.verb) && r.verb !== 'DELETE'
  return rawRequest(
    d.url,
    r.verb,
    r.url,
    {
      'X-Forwarded-For': client(),
      ...(hasBody ? { 'Content-Type': 'application/json' } : {}),
      ...headers,
    },
    hasBody ? '{}' : undefined,
  )
}

/** Logging out ends the session it carries: that route gets a session of its own. */
const cookieFor = async (r: ContractRoute): Promise<string> => (r.name === 'logout' ? login() : adminCookie)

const routes = contractRoutes()

beforeAll(async () => {
  d = await startDaemon({
    env: { TRUSTED_PROXIES: '127.0.0.1', WOL_BROADCAST: '127.0.0.1', MONITOR_INTERVAL_S: '0' },
  })
  const created = await d.admin('/api/consumer-keys', {
    method: 'POST',
    body: JSON.stringify({ name: 'security-suite' }),
  })
  expect(created.status).toBe(200)
  consumerKey = ((await created.json()) as { secret: string }).secret
  adminCookie = await login()
})
afterAll(() => d?.stop())

describe('the auth matrix over every contract route', () => {
  it('covers the whole contract', () => {
    expect(routes.length).toBeGreaterThan(140)
    expect(routes.filter((r) => ADMIN_SURFACES.has(r.surface)).length).toBeGreaterThan(100)
  })

  it.each(routes.filter((r) => ADMIN_SURFACES.has(r.surface)).map((r) => [`${r.verb} ${r.pattern}`, r] as const))(
    'admin route %s: every non-admin credential 401, the admin passes',
    async (_n, r) => {
      const answers = await Promise.all(
        CREDENTIALS.map(async (c) => [c, await call(r, headersFor(c, await cookieFor(r)))] as const),
      )
      for (const [c, a] of answers) {
        if (NON_ADMIN.includes(c)) expect({ c, status: a.status }).toEqual({ c, status: 401 })
        // The admin gets past the edge: the handler's own answer (never a crash).
        else expect({ c, status: a.status, body: a.body }).toEqual({ c, status: notGuard(a.status), body: a.body })
      }
    },
  )

  it.each(routes.filter((r) => r.surface === 'consumer').map((r) => [`${r.verb} ${r.pattern}`, r] as const))(
    'consumer route %s: the consumer key or the admin token pass, nothing else (not the admin cookie)',
    async (_n, r) => {
      for (const c of CREDENTIALS) {
        const a = await call(r, headersFor(c, adminCookie))
        if (c === 'consumer-key' || c === 'admin-token')
          expect({ c, status: a.status, body: a.body }).toEqual({ c, status: notGuard(a.status), body: a.body })
        else expect({ c, status: a.status }).toEqual({ c, status: 401 })
      }
    },
  )

  it.each(
    routes
      .filter((r) => !ADMIN_SURFACES.has(r.surface) && r.surface !== 'consumer')
      .map((r) => [`${r.verb} ${r.pattern}`, r] as const),
  )('public route %s: the same answer whoever calls', async (_n, r) => {
    const answers: (readonly [Credential, number | null])[] = []
    for (const c of CREDENTIALS) answers.push([c, (await call(r, headersFor(c, await cookieFor(r)))).status])
    const open = answers[0]![1]
    expect(open).not.toBe(401)
    expect(open! < 500, `${r.verb} ${r.url} answered ${open}`).toBe(true)
    for (const [c, status] of answers) expect({ c, status }).toEqual({ c, status: open })
  })

  it.each(
    routes
      .filter((r) => ADMIN_SURFACES.has(r.surface) && STATE_CHANGING.has(r.verb))
      .map((r) => [`${r.verb} ${r.pattern}`, r] as const),
  )('state change %s from a foreign Origin with the admin cookie: 403', async (_n, r) => {
    // The daemon's own host over https is another origin than the http daemon (issue 33 #8).
    for (const origin of [
      'https://evil.example',
      'null',
      `http://127.0.0.1.evil.example`,
      d.url.replace(/^http:/, 'https:'),
    ]) {
      const a = await call(r, { Cookie: adminCookie, Origin: origin })
      expect({ origin, status: a.status }).toEqual({ origin, status: 403 })
    }
    const viaReferer = await call(r, { Cookie: adminCookie, Referer: 'https://evil.example/page' })
    expect(viaReferer.status).toBe(403)
  })

  it.each(
    routes
      .filter((r) => ADMIN_SURFACES.has(r.surface) || r.surface === 'consumer')
      .map((r) => [`${r.verb} ${r.pattern}`, r] as const),
  )('%s: a wrong bearer is counted against the address (429 after five); the right one still passes', async (_n, r) => {
    const ip = client()
    const wrong = { 'X-Forwarded-For': ip, Authorization: 'Bearer wrong-credential-123' }
    for (let i = 0; i < 5; i++) expect((await call(r, wrong)).status).toBe(401)
    expect((await call(r, wrong)).status).toBe(429)
    // Only failures meet the lockout: whoever holds the credential on that address is let in (issue 33 #2).
    const right = r.surface === 'consumer' ? consumerKey : d.adminToken
    const after = await call(r, { 'X-Forwarded-For': ip, Authorization: `Bearer ${right}` })
    expect({ status: after.status, body: after.body }).toEqual({ status: notGuard(after.status), body: after.body })
  })
})

/**
 * The status an admin (or consumer) call may have once past the edge: whatever the handler
 * answers except the edge's refusals and a crash. Returned as is when it is one, so the matcher
 * shows the body of one that is not.
 */
function notGuard(status: number | null): number | null {
  if (status === null || status === 401 || status === 403 || status === 429 || status === 500) return -1
  return status
}

/**
 * Paths written to slip past a prefix check: encodings, `..`, doubled slashes, case, trailing
 * dots, parameters holding `/`, an absolute-form target, overlong paths. Each aims at an admin
 * route; sent byte for byte (no client normalisation), none may reach it without the admin.
 */
const TRICK_PATHS: readonly (readonly [string, string])[] = [
  ['GET', '/api/config/'],
  ['GET', '/api/config.'],
  ['GET', '/api/config%2e'],
  ['GET', '/API/CONFIG'],
  ['GET', '/Api/Config'],
  ['GET', '//api/config'],
  ['GET', '/api//config'],
  ['GET', '/./api/config'],
  ['GET', '/api/./config'],
  ['GET', '/api/../api/config'],
  ['GET', '/v1/../api/config'],
  ['GET', '/api/health/../config'],
  ['GET', '/api/health/..%2fconfig'],
  ['GET', '/api/health%2f..%2fconfig'],
  ['GET', '/api/%2e%2e/api/config'],
  ['GET', '/api/login/../config'],
  ['GET', '/api/session%2f..%2fconfig'],
  ['GET', '/api/con%66ig'],
  ['GET', '/%61pi/config'],
  ['GET', '/api\\config'],
  ['GET', '/api/config%00'],
  ['GET', '/api/config%20'],
  ['GET', '/api/config;.js'],
  ['GET', '/api/endpoints/..;/config'],
  ['GET', '/api/health-event/../config'],
  ['GET', '/assets/../api/config'],
  ['GET', '/assets/..%2f..%2fapi%2fconfig'],
  ['GET', '/api/audio/../config'],
  ['GET', '/api/config#/api/health'],
  ['GET', 'http://127.0.0.1@evil.example/api/config'],
  ['GET', '/v1/ADMIN/products'],
  ['GET', '/V1/admin/products'],
  ['GET', '/v1/admin/products/'],
  ['GET', '/v1/admin/products.'],
  ['GET', '/v1//admin/products'],
  ['GET', '/v1/admin//products'],
  ['GET', '/v1/admin%2fproducts'],
  ['GET', '/v1%2fadmin%2fproducts'],
  ['GET', '/v1/products/../admin/products'],
  ['GET', '/v1/products/%2e%2e/admin/products'],
  ['GET', '/v1/audio/../admin/products'],
  ['GET', '/v1/audio/..%2f..%2fv1%2fadmin%2fproducts'],
  ['GET', '/v1/machines/../admin/machines'],
  ['GET', '/v1/purchase/../admin/invoices'],
  ['GET', '/buy/../v1/admin/issuer-key'],
  ['GET', '/v1/admin/licenses/a%2f..%2fkey'],
  ['GET', '/api/jobs/a%2fb/stream'],
  ['PUT', '/api/models/..%2f..%2fetc%2fpasswd/knobs'],
  ['DELETE', '/api/services/asr%2f..%2f..%2fx'],
  ['POST', '/v1/admin/products/%2e%2e%2f%2e%2e%2fetc%2fpasswd/price-effect'],
  ['POST', '/v1/Admin/issuer-key'],
  ['GET', `/api/${'a'.repeat(70_000)}`],
  ['GET', `/api${'/..'.repeat(4000)}/config`],
]

describe('trick paths never reach an admin handler without the admin', () => {
  it('has the fifty-odd paths', () => expect(TRICK_PATHS.length).toBeGreaterThanOrEqual(50))

  it.each(TRICK_PATHS.map(([verb, p]) => [`${verb} ${p.slice(0, 80)}`, verb, p] as const))(
    '%s',
    async (_n, verb, p) => {
      const body = verb === 'GET' || verb === 'DELETE' ? undefined : '{}'
      const json: Record<string, string> = body ? { 'Content-Type': 'application/json' } : {}
      for (const c of NON_ADMIN) {
        const a = await rawRequest(
          d.url,
          verb,
          p,
          { 'X-Forwarded-For': client(), ...json, ...headersFor(c, adminCookie) },
          body,
        )
        // Refused (401, 403), no such route (400, 404, 405), or a request line the parser will not
        // read (431, or the connection closed on it): never an answer, never a crash or a hang.
        const refused = a.status === null ? a.error !== 'timed out' : a.status >= 400 && a.status < 500
        expect({ c, status: a.status, refused }).toEqual({
          c,
          status: a.status,
          refused: true,
        })
        expect(a.body).not.toContain('"settings"')
        expect(a.body).not.toContain('"products"')
      }
    },
  )
})
