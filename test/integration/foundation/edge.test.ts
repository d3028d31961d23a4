import fs from 'node:fs'
import http from 'node:http'
import net, { type AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { admitAtEdge, edgeOf, type EdgeDeps } from '../../../src-main/http/edge'
import { isAdmin, requestState } from '../../../src-main/http/requestState'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'

/**
 * The edge every request passes: credentials and their limiter, sessions that survive restarts,
 * the trusted-proxy rule, and input that must be refused before it reaches a handler. The daemon
 * trusts 127.0.0.1 as a proxy so each test can speak as its own client address.
 */
let d: TestDaemon
let nextClient = 10
/** A fresh client address for each test, so one test's failures do not lock out the next. */
const client = (): string => `198.51.100.${nextClient++}`

beforeAll(async () => {
  d = await startDaemon({ env: { TRUSTED_PROXIES: '127.0.0.1', CONSUMER_API_KEYS: 'lan-key-one-aaaaaaaa' } })
})
afterAll(() => d.stop())

const as = (ip: string, headers: Record<string, string> = {}) => ({ 'X-Forwarded-For': ip, ...headers })

describe('the credential limiter', () => {
  it('locks an address out after 5 wrong bearer tokens, with Retry-After; the right token still passes', async () => {
    const ip = client()
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${d.url}/api/config`, { headers: as(ip, { Authorization: 'Bearer guess-' + i }) })
      expect(res.status).toBe(401)
    }
    const locked = await fetch(`${d.url}/api/config`, { headers: as(ip, { Authorization: 'Bearer guess-5' }) })
    expect(locked.status).toBe(429)
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0)
    // Only failures meet the lockout: the operator on the same address is not shut out.
    const right = await fetch(`${d.url}/api/config`, { headers: as(ip, { Authorization: `Bearer ${d.adminToken}` }) })
    expect(right.status).toBe(200)
    // Another address is not affected.
    const other = await fetch(`${d.url}/api/config`, {
      headers: as(client(), { Authorization: `Bearer ${d.adminToken}` }),
    })
    expect(other.status).toBe(200)
  })

  it('counts wrong consumer keys and wrong logins against the same address', async () => {
    const ip = client()
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${d.url}/v1/models`, { headers: as(ip, { Authorization: 'Bearer nope-' + i }) })
      expect(res.status).toBe(401)
    }
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${d.url}/api/login`, {
        method: 'POST',
        headers: as(ip, { 'Content-Type': 'application/json' }),
        body: JSON.stringify({ token: 'wrong-' + i }),
      })
      expect(res.status).toBe(401)
    }
    const login = await fetch(`${d.url}/api/login`, {
      method: 'POST',
      headers: as(ip, { 'Content-Type': 'application/json' }),
      body: JSON.stringify({ token: 'wrong-2' }),
    })
    expect(login.status).toBe(429)
    const consumer = await fetch(`${d.url}/v1/models`, {
      headers: as(ip, { Authorization: 'Bearer lan-key-wrong-aaaaaa' }),
    })
    expect(consumer.status).toBe(429)
    // The /v1 gateway speaks OpenAI's error shape, with the spec's detail beside it.
    expect(await consumer.json()).toMatchObject({ error: { type: 'rate_limit_error', code: 'rate_limited' } })
  })

  it('believes X-Forwarded-For only from a trusted proxy', async () => {
    const untrusted = await startDaemon({})
    try {
      // 127.0.0.1 is not trusted here: a forged header does not move the caller to a fresh bucket.
      for (let i = 0; i < 5; i++)
        await fetch(`${untrusted.url}/api/config`, { headers: as(client(), { Authorization: 'Bearer x' }) })
      const res = await fetch(`${untrusted.url}/api/config`, {
        headers: as(client(), { Authorization: 'Bearer y' }),
      })
      expect(res.status).toBe(429)
    } finally {
      await untrusted.stop()
    }
  })
})

describe('sessions', () => {
  const loginFrom = async (url: string, token: string, headers: Record<string, string> = {}) =>
    fetch(`${url}/api/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      body: JSON.stringify({ token }),
    })
  const cookieOf = (res: Response): string => (res.headers.get('set-cookie') ?? '').split(';')[0] ?? ''

  it('a logged-out cookie stays dead after a restart; a live one survives it', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-edge-'))
    const first = await startDaemon({ dataDir })
    const ended = cookieOf(await loginFrom(first.url, first.adminToken))
    const kept = cookieOf(await loginFrom(first.url, first.adminToken))
    const out = await fetch(`${first.url}/api/logout`, { method: 'POST', headers: { Cookie: ended } })
    expect(out.status).toBe(200)
    await first.stop()
    const second = await startDaemon({ dataDir })
    try {
      expect((await fetch(`${second.url}/api/config`, { headers: { Cookie: ended } })).status).toBe(401)
      expect((await fetch(`${second.url}/api/config`, { headers: { Cookie: kept } })).status).toBe(200)
    } finally {
      await second.stop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })

  it('a malformed cookie is no session (401), never a 500', async () => {
    const res = await fetch(`${d.url}/api/config`, { headers: as(client(), { Cookie: 'tandem_session=%E0%A4%A' }) })
    expect(res.status).toBe(401)
    expect(await res.json()).toMatchObject({ code: 'unauthorized' })
  })

  it('marks the cookie Secure when a trusted proxy says the request came over https, and not otherwise', async () => {
    const viaHttps = await loginFrom(d.url, d.adminToken, as(client(), { 'X-Forwarded-Proto': 'https' }))
    expect(viaHttps.headers.get('set-cookie')).toMatch(/;\s*Secure/i)
    const plain = await loginFrom(d.url, d.adminToken, as(client()))
    expect(plain.headers.get('set-cookie')).not.toMatch(/;\s*Secure/i)
  })
})

describe('input the edge refuses', () => {
  const post = (p: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${d.url}${p}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${d.adminToken}`, 'Content-Type': 'application/json', ...headers },
      body,
    })

  it('a JSON body of null or an array is 400, never read as an empty object', async () => {
    for (const body of ['null', '[]', '"text"', '7']) {
      const res = await post('/api/node/node1/wake', body)
      expect(res.status).toBe(400)
      expect(await res.json()).toMatchObject({ code: 'bad_input', detail: expect.stringMatching(/JSON object/) })
    }
  })

  it('a path parameter that fails its schema is 404', async () => {
    expect((await post('/api/node/node3/wake', '{}')).status).toBe(404)
    expect((await d.admin('/api/jobs/not%20an%20id')).status).toBe(404)
    expect((await d.admin('/api/jobs/%E0%A4%A')).status).toBe(404)
  })

  it('a body that fails its schema is 400 naming the field', async () => {
    const res = await post('/api/node/node1/wake', JSON.stringify({ mac: 'not-a-mac' }))
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ detail: expect.stringMatching(/^mac:/) })
  })

  it('a 100,000-deep JSON body is 400 naming the depth limit; ordinary nesting still works', async () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000)
    const res = await post('/api/health-event', deep)
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ detail: expect.stringMatching(/deeper than 64/) })
    const nested = { service: 'app', ok: true, error: JSON.stringify({ a: { b: { c: { d: [1, [2, [3]]] } } } }) }
    expect((await post('/api/health-event', JSON.stringify(nested), as(client()))).status).toBe(200)
  })
})

describe('limits declared by methods', () => {
  it('/api/health-event is limited per address with RateLimit headers, then 429 with Retry-After', async () => {
    const ip = client()
    let last: Response | undefined
    let refused = 0
    for (let i = 0; i < 40; i++) {
      last = await fetch(`${d.url}/api/health-event`, {
        method: 'POST',
        headers: as(ip, { 'Content-Type': 'application/json', Authorization: 'Bearer lan-key-one-aaaaaaaa' }),
        body: JSON.stringify({ service: 'probe', ok: true }),
      })
      if (last.status === 429) refused++
    }
    expect(refused).toBeGreaterThan(0)
    expect(last?.status).toBe(429)
    expect(last?.headers.get('ratelimit-limit')).toBe('30')
    expect(Number(last?.headers.get('retry-after'))).toBeGreaterThan(0)
  })

  it('/v1/validate answers 200 for bad input and when limited, as the Keysat clients expect', async () => {
    const ip = client()
    const validate = (body: string) =>
      fetch(`${d.url}/v1/validate`, { method: 'POST', headers: as(ip, { 'Content-Type': 'application/json' }), body })
    for (const body of ['not json', 'null', '{"key": 42}', '{"key":"LIC1-x","fingerprint":12}']) {
      const res = await validate(body)
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual({ ok: false, reason: 'bad_format' })
    }
    const res = await validate('{"key":"LIC1-AAAA-BBBB"}')
    expect(res.headers.get('ratelimit-limit')).toBe('600')
    expect(Number(res.headers.get('ratelimit-remaining'))).toBeLessThan(600)
  })

  it('a limited /v1/validate is 200 rate_limited; a limited purchase poll is 429 in the licensing shape', async () => {
    const tight = await startDaemon({ env: { LICENSING_RATE_LIMIT: '2' } })
    try {
      const call = () => fetch(`${tight.url}/v1/validate`, { method: 'POST', body: '{"key":"LIC1-AAAA-BBBB"}' })
      await call()
      await call()
      const limited = await call()
      expect(limited.status).toBe(200)
      expect(await limited.json()).toEqual({ ok: false, reason: 'rate_limited' })
      const poll = await fetch(`${tight.url}/v1/purchase/00000000-0000-4000-8000-000000000000`)
      expect(poll.status).toBe(429)
      expect(await poll.json()).toMatchObject({ ok: false, error: 'rate_limited' })
      expect(Number(poll.headers.get('retry-after'))).toBeGreaterThan(0)
    } finally {
      await tight.stop()
    }
  })
})

describe('deep JSON on the gateway', () => {
  it('a 100,000-deep chat body is 400 naming the limit; a tool schema nested 40 deep still reaches the llm', async () => {
    let received = 0
    const llm = http.createServer((req, res) => {
      // Only chat counts: the daemon also asks the llm which model it serves (m: the gateway routes by it).
      if (req.url === '/v1/chat/completions') received++
      const body =
        req.url === '/v1/models' ? '{"object":"list","data":[{"id":"m","object":"model"}]}' : '{"choices":[]}'
      req.resume()
      req.on('end', () => res.writeHead(200, { 'Content-Type': 'application/json' }).end(body))
    })
    await new Promise<void>((r) => llm.listen(0, '127.0.0.1', () => r()))
    const port = (llm.address() as AddressInfo).port
    const gw = await startDaemon({ env: { NODE1_HOST: '127.0.0.1', NODE1_USER: 'tester', LLM_PORT: String(port) } })
    try {
      const chat = (body: string) =>
        fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body,
        })
      const deep = await chat('{"messages":' + '['.repeat(100_000) + ']'.repeat(100_000) + '}')
      expect(deep.status).toBe(400)
      expect(await deep.json()).toMatchObject({ error: { message: expect.stringMatching(/deeper than 256/) } })
      expect(received).toBe(0)
      let schema: Record<string, unknown> = { type: 'string' }
      for (let i = 0; i < 40; i++) schema = { type: 'object', properties: { inner: schema } }
      const tools = [{ type: 'function', function: { name: 'f', parameters: schema } }]
      const ok = await chat(JSON.stringify({ model: 'm', messages: [], tools }))
      expect(ok.status).toBe(200)
      expect(received).toBe(1)
    } finally {
      await gw.stop()
      await new Promise((r) => llm.close(r))
    }
  })
})

describe('the request state the edge leaves', () => {
  /** A request as the server would hand it over, never sent anywhere, through one server's edge. */
  let edge: EdgeDeps
  beforeAll(() => {
    edge = edgeOf(d.core)
  })
  function admitted(headers: Record<string, string>): {
    req: http.IncomingMessage
    res: http.ServerResponse
    admitted: boolean
  } {
    const req = new http.IncomingMessage(new net.Socket())
    req.method = 'POST'
    req.url = '/v1/chat/completions'
    req.headers = headers
    const res = new http.ServerResponse(req)
    return { req, res, admitted: admitAtEdge(edge, req, res, '/v1/chat/completions') }
  }

  it('holds no function made for its request (V8 may keep the state in the old generation, and the request with it)', () => {
    const one = admitted({ authorization: `Bearer ${d.adminToken}` })
    const two = admitted({ authorization: 'Bearer lan-key-one-aaaaaaaa' })
    expect([one.admitted, two.admitted]).toEqual([true, true])
    const a = requestState(one.res) as unknown as Record<string, unknown>
    const b = requestState(two.res) as unknown as Record<string, unknown>
    const fns = Object.keys(a).filter((k) => typeof a[k] === 'function')
    expect(fns.length).toBeGreaterThan(0)
    for (const k of fns) expect(b[k], k).toBe(a[k])
    // The admin is still told apart, on first asking.
    expect(isAdmin(one.req, one.res)).toBe(true)
    expect(isAdmin(two.req, two.res)).toBe(false)
    expect(requestState(one.res).consumer).toEqual({ kind: 'admin' })
  })
})
