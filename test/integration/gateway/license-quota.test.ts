import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ACCESS_MODEL, accessTier, adminPost, chatAs, issueAccess, startAccessRig, type AccessRig } from './accessRig'

/** A license's token quota, counted by the gateway and enforced on the key's next request (issue 45). */
const DAY = 86_400_000
let rig: AccessRig

beforeAll(async () => {
  rig = await startAccessRig('tandem-quota-')
})
afterAll(async () => {
  await rig.stop()
})

const chat = (secret: string, stream = false): Promise<Response> => chatAs(rig, secret, stream)

interface Usage {
  period_start: string
  resets_at: string
  tokens: { allowed: number | null; used: number; remaining: number | null }
  models: { model: string; requests: number; prompt_tokens: number; completion_tokens: number }[]
}

async function usage(secret: string): Promise<Usage> {
  const res = await fetch(`${rig.daemon.url}/v1/usage`, { headers: { authorization: `Bearer ${secret}` } })
  expect(res.status).toBe(200)
  return (await res.json()) as Usage
}

/** A license on a fresh tier with `tokens` per period, issued by the admin. */
async function accessLicense(slug: string, tokens: number) {
  return issueAccess(rig, await accessTier(rig, slug, { tokens_per_period: tokens }))
}

/** Chats until the key is refused (bounded); the answers' statuses in order. */
async function chatUntilRefused(secret: string, max = 20): Promise<Response> {
  for (let i = 0; i < max; i++) {
    const res = await chat(secret)
    if (res.status !== 200) return res
    await res.arrayBuffer()
    // The answer's usage lands when the response closes, a moment after the client has it.
    await new Promise((r) => setTimeout(r, 20))
  }
  throw new Error(`still answered after ${max} chats`)
}

describe("a license's token quota", () => {
  it('is refused 429 insufficient_quota once the period is spent, says when it resets, and /v1/usage agrees', async () => {
    const lic = await accessLicense('quota-a', 40)
    const refused = await chatUntilRefused(lic.secret)
    expect(refused.status).toBe(429)
    expect(refused.headers.get('x-should-retry')).toBe('false')
    const body = (await refused.json()) as { error: { type: string; code: string; message: string } }
    expect(body.error).toMatchObject({ type: 'insufficient_quota', code: 'insufficient_quota' })
    expect(body.error.message).toContain('resets at 2026-02-10T12:00:00.000Z')

    const u = await usage(lic.secret)
    expect(u.tokens.allowed).toBe(40)
    expect(u.tokens.used).toBeGreaterThanOrEqual(40)
    expect(u.tokens.remaining).toBe(0)
    expect(u.resets_at).toBe('2026-02-10T12:00:00.000Z')
    expect(u.models).toHaveLength(1)
    expect(u.models[0]).toMatchObject({ model: ACCESS_MODEL })
    expect(u.models[0]!.prompt_tokens + u.models[0]!.completion_tokens).toBe(u.tokens.used)
  })

  it('a top-up bought while over quota works at once, and /v1/validate reports what is left', async () => {
    const lic = await accessLicense('quota-b', 20)
    expect((await chatUntilRefused(lic.secret)).status).toBe(429)
    const top = await adminPost(rig, `/v1/admin/licenses/${lic.id}/top-ups`, { tokens: 1000 })
    expect(top.status).toBe(200)
    expect(await top.json()).toMatchObject({ tokens_per_period: 20, top_up_tokens: 1000 })
    const again = await chat(lic.secret)
    expect(again.status).toBe(200)
    await again.arrayBuffer()
    await new Promise((r) => setTimeout(r, 50))

    const v = (await (
      await fetch(`${rig.daemon.url}/v1/validate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key: lic.licenseKey }),
      })
    ).json()) as { ok: boolean; access?: { tokens_remaining: number; tokens_used: number } }
    expect(v.ok).toBe(true)
    const used = (await usage(lic.secret)).tokens.used
    expect(v.access).toMatchObject({ tokens_used: used, tokens_remaining: 1020 - used })
  })

  it('two streams racing the last tokens both finish, the overage is counted, and the next request is refused', async () => {
    const lic = await accessLicense('quota-c', 10)
    const [a, b] = await Promise.all([chat(lic.secret, true), chat(lic.secret, true)])
    expect([a.status, b.status]).toEqual([200, 200])
    const [ta, tb] = await Promise.all([a.text(), b.text()])
    expect(ta).toContain('[DONE]')
    expect(tb).toContain('[DONE]')
    await new Promise((r) => setTimeout(r, 50))
    expect((await usage(lic.secret)).tokens.used).toBeGreaterThan(10)
    expect((await chat(lic.secret)).status).toBe(429)
  })

  it('resets when the period ends, and the clock going back finds the spent period again', async () => {
    const lic = await accessLicense('quota-d', 20)
    expect((await chatUntilRefused(lic.secret)).status).toBe(429)
    rig.clock.advance(31 * DAY)
    const next = await chat(lic.secret)
    expect(next.status).toBe(200)
    await next.arrayBuffer()
    rig.clock.advance(-31 * DAY)
    expect((await chat(lic.secret)).status).toBe(429)
    rig.clock.advance(31 * DAY)
  })

  it('a license lapsing mid-stream: the stream finishes and is counted, the next request is refused', async () => {
    const tier = await accessTier(rig, 'quota-lapse', { tokens_per_period: 1_000_000 })
    // A 30-day tier with no grace, so the license lapses the moment the clock passes its 30 days.
    await rig.daemon.admin(`/v1/admin/policies/${tier.tierId}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ duration_days: 30, grace_period_days: 0 }),
    })
    const lic = await issueAccess(rig, tier)
    await rig.llm.setFault({ kind: 'slow', delayMs: 100 })
    try {
      const streaming = await chat(lic.secret, true)
      expect(streaming.status).toBe(200)
      const reader = streaming.body!.getReader()
      expect((await reader.read()).done).toBe(false)
      rig.clock.advance(31 * DAY)
      let rest = ''
      for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value)
      expect(rest).toContain('[DONE]')
    } finally {
      await rig.llm.setFault('none')
    }
    const refused = await chat(lic.secret)
    expect(refused.status).toBe(403)
    expect(JSON.stringify(await refused.json())).toMatch(/its license expired on/)
    rig.clock.advance(-31 * DAY)
    // Counted in the period it began in, though it ended after the lapse.
    expect((await usage(lic.secret)).models[0]?.requests).toBe(1)
  })

  it('survives a restart: the period usage is written and read back, never counted twice', async () => {
    const lic = await accessLicense('quota-e', 1_000_000)
    for (let i = 0; i < 3; i++) await (await chat(lic.secret)).arrayBuffer()
    await new Promise((r) => setTimeout(r, 50))
    const before = await usage(lic.secret)
    expect(before.models[0]!.requests).toBe(3)
    rig = await rig.restart()
    const after = await usage(lic.secret)
    expect(after.tokens.used).toBe(before.tokens.used)
    expect(after.models).toEqual(before.models)
  })
})
