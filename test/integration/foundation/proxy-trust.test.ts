import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'

/**
 * Issue 33, findings 2 and 8, against the real HTTP server: the operator cannot be locked out by
 * someone else's failures on a shared address (or behind a proxy Tandem does not trust, which the
 * Settings page then names), and the edges of the origin guard and of proxy trust hold. `proxied`
 * trusts 127.0.0.1 as a proxy, so each test speaks as its own client address; `direct` trusts no
 * proxy, like a daemon behind nginx that was not told about it.
 */
let proxied: TestDaemon
let direct: TestDaemon
let nextClient = 10
const client = (): string => `198.51.100.${nextClient++}`
const CONSUMER_KEY = 'lan-key-one-aaaaaaaa'

beforeAll(async () => {
  proxied = await startDaemon({ env: { TRUSTED_PROXIES: '127.0.0.1', CONSUMER_API_KEYS: CONSUMER_KEY } })
  direct = await startDaemon({ env: { CONSUMER_API_KEYS: CONSUMER_KEY } })
})
afterAll(async () => {
  await proxied?.stop()
  await direct?.stop()
})

const as = (ip: string, headers: Record<string, string> = {}) => ({ 'X-Forwarded-For': ip, ...headers })
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` })

async function login(d: TestDaemon, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${d.url}/api/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify({ token: d.adminToken }),
  })
}
const cookieOf = (res: Response): string => (res.headers.get('set-cookie') ?? '').split(';')[0] ?? ''

/** Six wrong admin tokens: the address's credential limiter is spent. */
async function guessFrom(d: TestDaemon, headers: Record<string, string>): Promise<number[]> {
  const statuses: number[] = []
  for (let i = 0; i < 6; i++)
    statuses.push((await fetch(`${d.url}/api/config`, { headers: { ...headers, ...bearer(`guess-${i}`) } })).status)
  return statuses
}

const configOf = async (d: TestDaemon) => (await (await d.admin('/api/config')).json()) as { warnings: string[] }

describe('the operator is not locked out by guesses from the same address (issue 33 #2)', () => {
  it('admits the session cookie, the admin token, a login and a consumer key while the address is locked', async () => {
    const ip = client()
    const cookie = cookieOf(await login(proxied, as(ip)))
    expect(await guessFrom(proxied, as(ip))).toEqual([401, 401, 401, 401, 401, 429])
    const get = (path: string, headers: Record<string, string>) =>
      fetch(`${proxied.url}${path}`, { headers: as(ip, headers) })
    expect((await get('/api/config', { Cookie: cookie })).status).toBe(200)
    expect((await get('/api/config', bearer(proxied.adminToken))).status).toBe(200)
    expect((await login(proxied, as(ip))).status).toBe(200)
    expect([401, 429]).not.toContain((await get('/v1/models', bearer(CONSUMER_KEY))).status)
    // Failures are still refused, and still 429 while the address is spent.
    const wrong = await get('/api/config', bearer('guess-again'))
    expect(wrong.status).toBe(429)
    expect(Number(wrong.headers.get('retry-after'))).toBeGreaterThan(0)
    expect((await get('/v1/models', bearer('wrong-key'))).status).toBe(429)
  })

  it('behind a proxy it does not trust: the operator still gets in, and the Settings page says why', async () => {
    expect((await configOf(direct)).warnings.join('\n')).not.toContain('TRUSTED_PROXIES')
    // Every client behind the "proxy" (here: forwarded from 127.0.0.1) shares its bucket.
    expect(await guessFrom(direct, as(client()))).toEqual([401, 401, 401, 401, 401, 429])
    expect((await direct.admin('/api/config')).status).toBe(200)
    const cookie = cookieOf(await login(direct))
    expect((await fetch(`${direct.url}/api/config`, { headers: { Cookie: cookie } })).status).toBe(200)
    const warning = (await configOf(direct)).warnings.find((w) => w.includes('TRUSTED_PROXIES'))
    expect(warning).toContain('127.0.0.1')
    expect(warning).toMatch(/X-Forwarded-For/)
    // A daemon that trusts its proxy has nothing to say.
    expect((await configOf(proxied)).warnings.join('\n')).not.toContain('TRUSTED_PROXIES')
  })
})

describe('the origin guard and proxy trust at their edges (issue 33 #8)', () => {
  const putSettings = (d: TestDaemon, headers: Record<string, string>) =>
    fetch(`${d.url}/api/settings`, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/json', ...headers },
      body: JSON.stringify({ values: {} }),
    })

  it('compares the scheme too: an https page does not drive an http daemon, unless a trusted proxy says https', async () => {
    const ip = client()
    const cookie = cookieOf(await login(proxied, as(ip)))
    const host = new URL(proxied.url).host
    const refused = await putSettings(proxied, as(ip, { Cookie: cookie, Origin: `https://${host}` }))
    expect(refused.status).toBe(403)
    expect(((await refused.json()) as { detail: string }).detail).toContain('TRUSTED_PROXIES')
    expect((await putSettings(proxied, as(ip, { Cookie: cookie, Origin: `http://${host}` }))).status).toBe(200)
    const viaTls = as(ip, { 'X-Forwarded-Proto': 'https', Cookie: cookie })
    expect((await putSettings(proxied, { ...viaTls, Origin: `https://${host}` })).status).toBe(200)
    expect((await putSettings(proxied, { ...viaTls, Origin: `http://${host}` })).status).toBe(403)
  })

  it('starts a playground generation only by POST, which the origin guard covers', async () => {
    const ip = client()
    const cookie = cookieOf(await login(proxied, as(ip)))
    const foreign = as(ip, { Cookie: cookie, Origin: 'http://evil.example' })
    const viaGet = await fetch(`${proxied.url}/api/gateway/playground/chat?prompt=hi`, { headers: foreign })
    expect(viaGet.status).toBe(404)
    const post = (headers: Record<string, string>) =>
      fetch(`${proxied.url}/api/gateway/playground/chat`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream', ...headers },
        body: JSON.stringify({ prompt: 'hi' }),
      })
    expect((await post(foreign)).status).toBe(403)
    const same = await post(as(ip, { Cookie: cookie, Origin: proxied.url }))
    // Past the edge and the guard: the playground's own answer (no llm is configured here).
    expect([401, 403, 404]).not.toContain(same.status)
    await same.body?.cancel()
  })

  it('keeps the admin cookie off the consumer surface; the admin token as a Bearer still passes', async () => {
    const ip = client()
    const cookie = cookieOf(await login(proxied, as(ip)))
    const get = (path: string, headers: Record<string, string>) =>
      fetch(`${proxied.url}${path}`, { headers: as(ip, headers) })
    expect((await get('/v1/models', { Cookie: cookie })).status).toBe(401)
    expect((await get('/api/endpoints', { Cookie: cookie })).status).toBe(401)
    const upload = await fetch(`${proxied.url}/api/audio/transcribe-with-speakers`, {
      method: 'POST',
      headers: as(ip, { Cookie: cookie, Origin: proxied.url }),
      body: new FormData(),
    })
    expect(upload.status).toBe(401)
    expect([401, 403, 429]).not.toContain((await get('/v1/models', bearer(proxied.adminToken))).status)
  })

  it('lets the cookie reach the playground upload route from the dashboard only when PLAYGROUND_SESSION_UPLOADS is on', async () => {
    const d = await startDaemon({ env: { CONSUMER_API_KEYS: CONSUMER_KEY, PLAYGROUND_SESSION_UPLOADS: 'on' } })
    try {
      const cookie = cookieOf(await login(d))
      const upload = (headers: Record<string, string>) =>
        fetch(`${d.url}/api/audio/transcribe-with-speakers`, { method: 'POST', headers, body: new FormData() })
      expect([401, 403, 429]).not.toContain((await upload({ Cookie: cookie, Origin: d.url })).status)
      expect((await upload({ Cookie: cookie, Origin: 'http://evil.example' })).status).toBe(401)
      expect((await fetch(`${d.url}/v1/models`, { headers: { Cookie: cookie, Origin: d.url } })).status).toBe(401)
    } finally {
      await d.stop()
    }
  })

  it('reads forwarded addresses with ports, and never lets an unusable one fall back to the proxy', async () => {
    expect(await guessFrom(proxied, as('9.9.9.5:1234'))).toEqual([401, 401, 401, 401, 401, 429])
    expect((await fetch(`${proxied.url}/api/config`, { headers: as('9.9.9.5:999', bearer('x')) })).status).toBe(429)
    expect((await fetch(`${proxied.url}/api/config`, { headers: as('9.9.9.6:1234', bearer('x')) })).status).toBe(401)
    expect(await guessFrom(proxied, as('[2001:db8::1]:443'))).toEqual([401, 401, 401, 401, 401, 429])
    expect((await fetch(`${proxied.url}/api/config`, { headers: as('2001:db8:0:0:1::9', bearer('x')) })).status).toBe(
      429,
    )
    // `9.9.9.7, unknown` is 9.9.9.7; the proxy's own bucket (127.0.0.1) is untouched by all of the above.
    expect(await guessFrom(proxied, as('9.9.9.7, unknown'))).toEqual([401, 401, 401, 401, 401, 429])
    expect((await fetch(`${proxied.url}/api/config`, { headers: as('9.9.9.8', bearer('x')) })).status).toBe(401)
    expect((await fetch(`${proxied.url}/api/config`, { headers: bearer('x') })).status).toBe(401)
  })

  it('takes the last X-Forwarded-Proto, the one the trusted proxy wrote', async () => {
    const viaTls = await login(proxied, as(client(), { 'X-Forwarded-Proto': 'http, https' }))
    expect(viaTls.headers.get('set-cookie')).toMatch(/;\s*Secure/i)
    const viaPlain = await login(proxied, as(client(), { 'X-Forwarded-Proto': 'https, http' }))
    expect(viaPlain.headers.get('set-cookie')).not.toMatch(/;\s*Secure/i)
  })

  it('refuses TRUSTED_PROXIES=0.0.0.0/0 as a setting: the daemon starts, says so, and trusts no one', async () => {
    const d = await startDaemon({ env: { TRUSTED_PROXIES: '0.0.0.0/0, ::/0' } })
    try {
      expect(d.core.config.trustedProxies).toEqual([])
      const bad = (await configOf(d)).warnings.find((w) => w.startsWith('TRUSTED_PROXIES'))
      expect(bad).toMatch(/0\.0\.0\.0\/0 trusts every IPv4 address/)
      // Not trusted: a forged header does not move a guesser to a fresh bucket.
      await guessFrom(d, as(client()))
      expect((await fetch(`${d.url}/api/config`, { headers: as(client(), bearer('x')) })).status).toBe(429)
    } finally {
      await d.stop()
    }
  })
})
