import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { startRig, waitFor, type GatewayRig } from './setup'

const MODEL = 'sim/Qwen3-8B-Instruct'
let rig: GatewayRig
const clock = new ManualClock(Date.UTC(2026, 10, 23, 8, 0, 0))

interface Created {
  id: string
  name: string
  prefix: string
  secret: string
  models: string[] | null
}

async function createKey(body: Record<string, unknown>): Promise<Created> {
  const res = await rig.daemon.admin('/api/consumer-keys', { method: 'POST', body: JSON.stringify(body) })
  expect(res.status).toBe(200)
  return (await res.json()) as Created
}

function chat(secret: string | null, body: Record<string, unknown> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(`${rig.daemon.url}/v1/chat/completions`, {
    method: 'POST',
    signal,
    headers: { 'content-type': 'application/json', ...(secret ? { authorization: `Bearer ${secret}` } : {}) },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hello there' }], ...body }),
  })
}

const endpoints = (secret: string): Promise<Response> =>
  fetch(`${rig.daemon.url}/api/endpoints`, { headers: { authorization: `Bearer ${secret}` } })

function failedCredentialsLeft(): number {
  return rig.daemon.core.limits.peek('credential', '127.0.0.1').remaining
}

beforeAll(async () => {
  rig = await startRig({ CONSUMER_API_KEYS: 'legacy-lan-key-0123456789' }, { clock })
})
afterAll(() => rig.stop())

describe('named consumer keys', () => {
  let a: Created
  let b: Created

  it('creates a key whose secret is shown once and stored only as its SHA-256', async () => {
    a = await createKey({ name: 'chat ui' })
    b = await createKey({ name: 'batch job', requests_per_minute: 2, max_concurrent: 1, models: [MODEL] })
    expect(a.secret).toMatch(/^tdm_[a-f0-9]{8}_[A-Za-z0-9_-]{43}$/)
    expect(a.secret.startsWith(a.prefix)).toBe(true)
    const list = (await (await rig.daemon.admin('/api/consumer-keys')).json()) as Record<string, unknown>
    expect(JSON.stringify(list)).not.toContain(a.secret.slice(14))
    expect(list).toMatchObject({ legacy_keys: 1, key_required: true })
    const db = fs.readFileSync(path.join(rig.daemon.dataDir, 'gateway.db'))
    const wal = fs.existsSync(path.join(rig.daemon.dataDir, 'gateway.db-wal'))
      ? fs.readFileSync(path.join(rig.daemon.dataDir, 'gateway.db-wal'))
      : Buffer.alloc(0)
    expect(Buffer.concat([db, wal]).includes(a.secret)).toBe(false)
    expect(fs.statSync(path.join(rig.daemon.dataDir, 'gateway.db')).mode & 0o777).toBe(0o600)
  })

  it('lets a named key and a legacy key through, and refuses none', async () => {
    expect((await chat(a.secret)).status).toBe(200)
    expect((await chat('legacy-lan-key-0123456789')).status).toBe(200)
    expect((await chat(null)).status).toBe(401)
  })

  it('answers a wrong key 401 and counts it against the address', async () => {
    const before = failedCredentialsLeft()
    const res = await chat(`${a.secret.slice(0, -4)}AAAA`)
    expect(res.status).toBe(401)
    expect(await res.json()).toMatchObject({ error: { code: 'unauthorized' } })
    expect(failedCredentialsLeft()).toBe(before - 1)
    rig.daemon.core.limits.reset('credential', '127.0.0.1')
  })

  it('refuses a disabled key (401, counted), and takes it back when enabled', async () => {
    const k = await createKey({ name: 'paused' })
    await rig.daemon.admin(`/api/consumer-keys/${k.id}`, { method: 'PATCH', body: JSON.stringify({ disabled: true }) })
    const before = failedCredentialsLeft()
    expect((await endpoints(k.secret)).status).toBe(401)
    expect(failedCredentialsLeft()).toBe(before - 1)
    await rig.daemon.admin(`/api/consumer-keys/${k.id}`, { method: 'PATCH', body: JSON.stringify({ disabled: false }) })
    expect((await endpoints(k.secret)).status).toBe(200)
    rig.daemon.core.limits.reset('credential', '127.0.0.1')
  })

  it('refuses a key once it has expired (401, counted)', async () => {
    const k = await createKey({ name: 'visitor', expires_at: clock.now() + 60_000 })
    expect((await endpoints(k.secret)).status).toBe(200)
    clock.advance(61_000)
    const before = failedCredentialsLeft()
    expect((await endpoints(k.secret)).status).toBe(401)
    expect(failedCredentialsLeft()).toBe(before - 1)
    rig.daemon.core.limits.reset('credential', '127.0.0.1')
  })

  it('answers 403 in OpenAI shape for a model outside the key’s list', async () => {
    const res = await chat(b.secret, { model: 'other/Model-70B' })
    expect(res.status).toBe(403)
    expect(await res.json()).toMatchObject({ error: { code: 'forbidden', param: 'model' } })
    expect(rig.llm.lastRequest).not.toMatchObject({ model: 'other/Model-70B' })
  })

  it('answers 429 with Retry-After over the key’s rate; other keys are unaffected', async () => {
    clock.advance(120_000)
    expect((await endpoints(b.secret)).status).toBe(200)
    expect((await endpoints(b.secret)).status).toBe(200)
    const over = await chat(b.secret)
    expect(over.status).toBe(429)
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(await over.json()).toMatchObject({ error: { code: 'rate_limited' } })
    expect((await endpoints(a.secret)).status).toBe(200)
    clock.advance(60_000)
    expect((await endpoints(b.secret)).status).toBe(200)
  })

  it('answers 429 over the key’s concurrent-request cap; other keys are unaffected', async () => {
    clock.advance(120_000)
    await rig.llm.setFault('hang')
    const ac = new AbortController()
    const first = chat(b.secret, {}, ac.signal).catch(() => null)
    const inFlight = async (): Promise<number> => {
      const list = (await (await rig.daemon.admin('/api/consumer-keys')).json()) as { keys: Created[] }
      return (list.keys.find((k) => k.id === b.id) as unknown as { in_flight: number }).in_flight
    }
    let n = 0
    await waitFor(() => {
      void inFlight().then((v) => (n = v))
      return n === 1
    })
    const second = await endpoints(b.secret)
    expect(second.status).toBe(429)
    expect(second.headers.get('retry-after')).toBe('1')
    expect((await endpoints(a.secret)).status).toBe(200)
    ac.abort()
    await first
    await rig.llm.setFault('none')
    await waitFor(() => {
      void inFlight().then((v) => (n = v))
      return n === 0
    })
    expect((await endpoints(b.secret)).status).toBe(200)
  })

  it('never holds the admin to a key’s limits', async () => {
    clock.advance(120_000)
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${rig.daemon.url}/api/endpoints`, {
        headers: { authorization: `Bearer ${rig.daemon.adminToken}` },
      })
      expect(res.status).toBe(200)
    }
  })

  it('deletes a key: its secret stops working', async () => {
    const k = await createKey({ name: 'short-lived' })
    expect((await endpoints(k.secret)).status).toBe(200)
    const del = await rig.daemon.admin(`/api/consumer-keys/${k.id}`, { method: 'DELETE' })
    expect(await del.json()).toEqual({ deleted: true })
    expect((await endpoints(k.secret)).status).toBe(401)
    rig.daemon.core.limits.reset('credential', '127.0.0.1')
  })

  it('refuses bad input: a nameless key, a non-positive limit, an unknown id', async () => {
    const bad = await rig.daemon.admin('/api/consumer-keys', { method: 'POST', body: JSON.stringify({ name: '' }) })
    expect(bad.status).toBe(400)
    const zero = await rig.daemon.admin('/api/consumer-keys', {
      method: 'POST',
      body: JSON.stringify({ name: 'x', requests_per_minute: 0 }),
    })
    expect(zero.status).toBe(400)
    const unknown = await rig.daemon.admin('/api/consumer-keys/0123456789abcdef', { method: 'DELETE' })
    expect(unknown.status).toBe(404)
  })

  it('keeps named keys away from the control API', async () => {
    expect(
      (await fetch(`${rig.daemon.url}/api/consumer-keys`, { headers: { authorization: `Bearer ${a.secret}` } })).status,
    ).toBe(401)
    rig.daemon.core.limits.reset('credential', '127.0.0.1')
  })
})
