import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { accessTier, adminPost, chatAs, issueAccess } from './accessRig'
import { startRig, type GatewayRig } from './setup'

/**
 * Selling access must not lock the operator's own LAN apps out (issue 45): a buyer's key does not
 * make keyless LAN clients need one (only a key the operator makes does), and a buyer's key that
 * comes from the LAN is still held to its license and counted.
 */
let rig: GatewayRig

beforeAll(async () => {
  rig = await startRig({})
})
afterAll(() => rig.stop())

const send = (p: string, body: unknown): Promise<Response> => adminPost(rig, p, body)
const chat = (secret?: string): Promise<Response> => chatAs(rig, secret)

describe('a LAN with sold keys', () => {
  it('keeps serving keyless LAN clients, and holds a buyer’s key that comes anyway to its license', async () => {
    const issued = await issueAccess(rig, await accessTier(rig, 'lan', { tokens_per_period: 5 }))

    const open = await chat()
    expect(open.status).toBe(200)
    await open.arrayBuffer()

    const first = await chat(issued.secret)
    expect(first.status).toBe(200)
    await first.arrayBuffer()
    await new Promise((r) => setTimeout(r, 50))
    // Its license's 5 tokens are spent by the first answer: its next request is refused, from the LAN too.
    expect((await chat(issued.secret)).status).toBe(429)
    expect((await send(`/v1/admin/licenses/${issued.id}/suspend`, { reason: 'test' })).status).toBe(200)
    expect((await chat(issued.secret)).status).toBe(403)
    expect((await chat()).status).toBe(200)

    // A key the operator makes closes the LAN to keyless clients, as before.
    expect((await send('/api/consumer-keys', { name: 'office' })).status).toBe(200)
    expect((await chat()).status).toBe(401)
  })
})
