import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readSse, startDaemon, type TestDaemon } from '../../helpers/daemon'

let d: TestDaemon
beforeAll(async () => {
  d = await startDaemon({
    env: {
      REGISTRY_API_KEY: 'nvapi-registry-secret-xyz',
      CHAT_UI_URL: 'http://chat.lan:3000',
      // Lets a test speak as another client address, so one test's lockout does not reach the next.
      TRUSTED_PROXIES: '127.0.0.1',
    },
  })
})
afterAll(() => d.stop())

async function login(token: string, ip?: string): Promise<Response> {
  return fetch(`${d.url}/api/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(ip ? { 'X-Forwarded-For': ip } : {}) },
    body: JSON.stringify({ token }),
  })
}

function cookieOf(res: Response): string {
  const raw = res.headers.get('set-cookie') ?? ''
  return raw.split(';')[0] ?? ''
}

describe('health, config and errors', () => {
  it('answers health without a credential', async () => {
    const res = await fetch(`${d.url}/api/health`)
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ ok: true, version: expect.stringMatching(/^\d+\.\d+\.\d+:\d+$/) })
  })

  it('refuses the control API without a credential (401, detail+code)', async () => {
    const res = await fetch(`${d.url}/api/config`)
    expect(res.status).toBe(401)
    expect(await res.json()).toEqual({ detail: expect.any(String), code: 'unauthorized' })
  })

  it('refuses a wrong bearer token', async () => {
    const res = await fetch(`${d.url}/api/config`, {
      headers: { Authorization: 'Bearer wrong-token-wrong-token', 'X-Forwarded-For': '192.0.2.78' },
    })
    expect(res.status).toBe(401)
  })

  it('serves config to the admin with secrets masked and the chat URL', async () => {
    const res = await d.admin('/api/config')
    expect(res.status).toBe(200)
    const text = await res.text()
    expect(text).not.toContain('nvapi-registry-secret-xyz')
    expect(text).not.toContain(d.adminToken)
    const body = JSON.parse(text) as {
      chat_ui_url: string
      settings: { name: string; value: string; source: string }[]
    }
    expect(body.chat_ui_url).toBe('http://chat.lan:3000')
    expect(body.settings.find((s) => s.name === 'REGISTRY_API_KEY')).toMatchObject({
      source: 'environment',
      value: '••••••••',
    })
  })

  it('answers an unknown route with 404 JSON', async () => {
    const res = await d.admin('/api/no-such-thing')
    expect(res.status).toBe(404)
    expect(await res.json()).toMatchObject({ code: 'not_found' })
  })

  it('answers a browser sent to an unknown address with a page and a way back, signed in or not', async () => {
    const html = { Accept: 'text/html,application/xhtml+xml,*/*;q=0.8' }
    for (const res of [
      await fetch(`${d.url}/no/such/page`, { headers: html }),
      await d.admin('/no/such/page', { headers: html }),
    ]) {
      expect(res.status).toBe(404)
      expect(res.headers.get('content-type')).toContain('text/html')
      const page = await res.text()
      expect(page).toContain('<h1>Page not found</h1>')
      expect(page).toContain('<a href="/">Open the dashboard</a>')
    }
    // API clients, and anything under /api/ or /v1/, keep their JSON.
    expect((await d.admin('/no/such/page')).headers.get('content-type')).toContain('application/json')
    expect((await d.admin('/api/no-such-thing', { headers: html })).headers.get('content-type')).toContain(
      'application/json',
    )
    expect((await fetch(`${d.url}/no/such/page`)).status).toBe(401)
  })

  it('rejects malformed JSON with 400 and an oversized body with 413', async () => {
    const bad = await d.admin('/api/settings', { method: 'PUT', body: '{"values": {' })
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ code: 'bad_input', detail: 'malformed JSON body' })
    const big = await d.admin('/api/settings', {
      method: 'PUT',
      body: JSON.stringify({ values: { X: 'a'.repeat(1_100_000) } }),
    })
    expect(big.status).toBe(413)
  })

  it('answers an unreadable body on /v1/validate with 200 and ok:false, as validate always does', async () => {
    const res = await fetch(`${d.url}/v1/validate`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{"key":',
    })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ ok: false, reason: 'bad_format' })
  })

  it('rejects input that fails the schema with a readable 400', async () => {
    const res = await d.admin('/api/settings', { method: 'PUT', body: JSON.stringify({ values: 'nope' }) })
    expect(res.status).toBe(400)
    expect((await res.json()) as { detail: string }).toMatchObject({ detail: expect.stringContaining('values') })
  })

  it('saves settings, refusing unknown names and bad values without writing', async () => {
    const bad = await d.admin('/api/settings', { method: 'PUT', body: JSON.stringify({ values: { LLM_PORT: 'abc' } }) })
    expect(bad.status).toBe(400)
    expect(fs.existsSync(path.join(d.dataDir, 'settings.json'))).toBe(false)
    const env = await d.admin('/api/settings', {
      method: 'PUT',
      body: JSON.stringify({ values: { REGISTRY_API_KEY: 'x' } }),
    })
    expect(env.status).toBe(400)
    const ok = await d.admin('/api/settings', { method: 'PUT', body: JSON.stringify({ values: { LLM_PORT: '8001' } }) })
    expect(await ok.json()).toEqual({ saved: ['LLM_PORT'], restart_required: true })
    expect(JSON.parse(fs.readFileSync(path.join(d.dataDir, 'settings.json'), 'utf8'))).toEqual({ LLM_PORT: '8001' })
  })
})

describe('admin token, sessions and the origin guard', () => {
  it('writes the generated admin token with mode 0600', () => {
    const file = path.join(d.dataDir, 'admin-token')
    expect(fs.readFileSync(file, 'utf8').trim()).toBe(d.adminToken)
    expect(fs.statSync(file).mode & 0o777).toBe(0o600)
  })

  it('logs in with the token and sets an HttpOnly, SameSite=Strict session cookie', async () => {
    const res = await login(d.adminToken)
    expect(res.status).toBe(200)
    const raw = res.headers.get('set-cookie') ?? ''
    expect(raw).toMatch(/^tandem_session=[A-Za-z0-9_-]{43};/)
    expect(raw).toMatch(/HttpOnly/i)
    expect(raw).toMatch(/SameSite=Strict/i)
    expect(raw).toMatch(/Max-Age=43200/i)
    const cookie = cookieOf(res)
    const session = await fetch(`${d.url}/api/session`, { headers: { Cookie: cookie } })
    expect(await session.json()).toEqual({ authenticated: true })
    const cfg = await fetch(`${d.url}/api/config`, { headers: { Cookie: cookie } })
    expect(cfg.status).toBe(200)
  })

  it('ends the session on logout, so the old cookie stops working', async () => {
    const cookie = cookieOf(await login(d.adminToken))
    const out = await fetch(`${d.url}/api/logout`, { method: 'POST', headers: { Cookie: cookie } })
    expect(out.status).toBe(200)
    const after = await fetch(`${d.url}/api/config`, { headers: { Cookie: cookie } })
    expect(after.status).toBe(401)
  })

  it('refuses a cross-origin state change with the session cookie (403) and allows same-origin', async () => {
    const cookie = cookieOf(await login(d.adminToken))
    const body = JSON.stringify({ values: {} })
    const cross = await fetch(`${d.url}/api/settings`, {
      method: 'PUT',
      headers: { Cookie: cookie, Origin: 'http://evil.example', 'Content-Type': 'application/json' },
      body,
    })
    expect(cross.status).toBe(403)
    expect(await cross.json()).toMatchObject({ code: 'forbidden' })
    const viaReferer = await fetch(`${d.url}/api/jobs/x/cancel`, {
      method: 'POST',
      headers: { Cookie: cookie, Referer: 'http://evil.example/page' },
    })
    expect(viaReferer.status).toBe(403)
    const same = await fetch(`${d.url}/api/settings`, {
      method: 'PUT',
      headers: { Cookie: cookie, Origin: d.url, 'Content-Type': 'application/json' },
      body,
    })
    expect(same.status).toBe(200)
  })

  it('does not origin-guard the exempt consumer paths, and answers their CORS preflight', async () => {
    const pre = await fetch(`${d.url}/api/health-event`, {
      method: 'OPTIONS',
      headers: { Origin: 'http://app.example' },
    })
    expect(pre.status).toBe(204)
    expect(pre.headers.get('access-control-allow-origin')).toBe('*')
    const control = await fetch(`${d.url}/api/config`, { method: 'OPTIONS', headers: { Origin: 'http://app.example' } })
    expect(control.headers.get('access-control-allow-origin')).toBeNull()
  })

  it('sends CORS headers only to requests with an Origin, and keeps a cache from reusing one answer for the other', async () => {
    const browser = await fetch(`${d.url}/v1/openapi.json`, { headers: { Origin: 'http://app.example' } })
    expect(browser.headers.get('access-control-allow-origin')).toBe('*')
    expect(browser.headers.get('access-control-expose-headers')).toContain('RateLimit-Remaining')
    const script = await fetch(`${d.url}/v1/openapi.json`)
    expect(script.status).toBe(200)
    expect(script.headers.get('x-content-type-options')).toBe('nosniff')
    expect(script.headers.get('access-control-allow-origin')).toBeNull()
    expect(script.headers.get('access-control-expose-headers')).toBeNull()
    expect(script.headers.get('vary')).toBe('Origin')
    // The control API sends no CORS headers to anyone, so its answers need no Vary either.
    const control = await fetch(`${d.url}/api/health`)
    expect(control.headers.get('vary')).toBeNull()
    // An OPTIONS without an Origin is not a preflight: it is not answered with CORS headers.
    const options = await fetch(`${d.url}/api/health-event`, { method: 'OPTIONS' })
    expect(options.headers.get('access-control-allow-origin')).toBeNull()
    expect(options.headers.get('access-control-allow-methods')).toBeNull()
  })

  it('leaves consumer paths open on the LAN when no consumer keys are set', async () => {
    const res = await fetch(`${d.url}/api/health-event`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Origin: 'http://other-app.lan' },
      body: '{"service": 12}',
    })
    // Reaches the handler (input validation), not the auth layer or the origin guard.
    expect(res.status).not.toBe(401)
    expect(res.status).not.toBe(403)
  })

  it('rate-limits failed logins per address', async () => {
    const statuses: number[] = []
    for (let i = 0; i < 7; i++) statuses.push((await login('definitely-not-the-token', '192.0.2.77')).status)
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401])
    expect(statuses.slice(5)).toEqual([429, 429])
    const locked = await login('still-not-the-token', '192.0.2.77')
    expect(locked.status).toBe(429)
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0)
    // The right token still logs in: someone else's guesses on the address do not lock the operator out.
    expect((await login(d.adminToken, '192.0.2.77')).status).toBe(200)
  })

  it('never writes the admin token or registry key to the log', () => {
    const all = d.logs.lines.join('\n')
    expect(all).not.toContain(d.adminToken)
    expect(all).not.toContain('nvapi-registry-secret-xyz')
  })
})

describe('jobs over HTTP', () => {
  it('lists jobs, streams one as SSE with replay, and 404s an unknown one', async () => {
    let open!: () => void
    const gate = new Promise<void>((r) => (open = r))
    const rec = d.core.jobs.start('download', 'org/model', async (job) => {
      job.phase('Connecting')
      job.log('hello')
      await gate
      job.progress({ percent: 100 })
      return { ok: 1 }
    })
    const list = (await (await d.admin('/api/jobs?kind=download')).json()) as { id: string }[]
    expect(list.map((j) => j.id)).toContain(rec.id)
    const conflict = await d.admin('/api/jobs/nope')
    expect(conflict.status).toBe(404)
    const streaming = d.admin(`/api/jobs/${rec.id}/stream`)
    open()
    const res = await streaming
    expect(res.headers.get('content-type')).toContain('text/event-stream')
    const events = await readSse(res)
    expect(events.map((e) => e.event)).toEqual(['message', 'message', 'message', 'message', 'end'])
    const parsed = events.slice(0, 4).map((e) => JSON.parse(e.data) as { type: string })
    expect(parsed.map((e) => e.type)).toEqual(['phase', 'log', 'progress', 'end'])
    expect(events[0]?.id).toBe('1')
    const resumed = await readSse(await d.admin(`/api/jobs/${rec.id}/stream`, { headers: { 'Last-Event-ID': '3' } }))
    expect(resumed.map((e) => e.event)).toEqual(['message', 'end'])
    expect(JSON.parse(resumed[0]?.data ?? '{}')).toMatchObject({ type: 'end', state: 'succeeded' })
  })
})
