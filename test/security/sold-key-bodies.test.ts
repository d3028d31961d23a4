import net from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startRig, waitFor, type GatewayRig } from '../integration/gateway/setup'

/**
 * Issue 45, "safe on the internet": each buyer's key has its own share of the request-body memory
 * budget, so two buyers sending the largest bodies they can never starve a third. The budget is
 * 24 MiB (a body costs twice its size): a sold key may hold 8 MiB of it, the operator's keys and
 * each address 12 MiB. Buyers reach the daemon through the trusted proxy on 127.0.0.1 and are
 * named by X-Forwarded-For (documentation addresses, never contacted). The upload spool is 64 MiB:
 * a sold key may hold a third of it.
 */
const MiB = 1024 * 1024
const MODEL = 'sim/Qwen3-8B-Instruct'
let rig: GatewayRig

beforeAll(async () => {
  rig = await startRig({ TRUSTED_PROXIES: '127.0.0.1', GATEWAY_BODY_BUDGET_MB: '24', GATEWAY_SPOOL_MB: '64' })
})
afterAll(() => rig.stop())

let products = 0

/** Three licenses on a tier that sells access: their gateway keys. */
async function soldKeys(): Promise<string[]> {
  const send = (path: string, body: unknown) =>
    rig.daemon.admin(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
  const product = (await (
    await send('/v1/admin/products', { slug: `gpu-${++products}`, name: 'GPU', price_value: 1 })
  ).json()) as {
    id: string
  }
  const tier = (await (
    await send(`/v1/admin/products/${product.id}/policies`, { slug: 't', name: 'T', access: {} })
  ).json()) as {
    id: string
  }
  const keys: string[] = []
  for (let i = 0; i < 3; i++) {
    const issued = (await (
      await send('/v1/admin/licenses', { product_id: product.id, policy_id: tier.id })
    ).json()) as {
      gateway_key: string
    }
    keys.push(issued.gateway_key)
  }
  return keys
}

/** A chunked chat body of `bytes` (a JSON string padded with spaces) that is never finished: held. */
async function holdChunked(key: string, from: string, bytes: number): Promise<{ received(): string; close(): void }> {
  const socket = net.connect({ port: Number(new URL(rig.daemon.url).port), host: '127.0.0.1' })
  let received = ''
  socket.on('data', (c: Buffer) => (received += c.toString('latin1')))
  socket.on('error', () => undefined)
  await new Promise<void>((r) => socket.once('connect', () => r()))
  socket.write(
    `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
      `Authorization: Bearer ${key}\r\nX-Forwarded-For: ${from}\r\nTransfer-Encoding: chunked\r\n\r\n`,
  )
  const chunk = Buffer.alloc(MiB / 4, 0x20)
  chunk[0] = 0x7b // '{' then spaces: valid JSON so far, never closed
  for (let sent = 0; sent < bytes; sent += chunk.length) {
    if (received !== '') break
    const piece = sent === 0 ? chunk : Buffer.alloc(chunk.length, 0x20)
    await new Promise<void>((r) => socket.write(`${piece.length.toString(16)}\r\n`, () => r()))
    await new Promise<void>((r) => socket.write(piece, () => r()))
    await new Promise<void>((r) => socket.write('\r\n', () => r()))
  }
  return { received: () => received, close: () => socket.destroy() }
}

describe('a buyer’s key has its own share of the body budget', () => {
  it('two buyers holding all they can leave room for a third buyer’s body', async () => {
    const [a, b, c] = (await soldKeys()) as [string, string, string]
    // Each tries to hold 5.5 MiB (11 MiB of budget): more than a sold key's third, less than half.
    const heldA = await holdChunked(a, '203.0.113.1', 5.5 * MiB)
    const heldB = await holdChunked(b, '203.0.113.2', 5.5 * MiB)
    await new Promise((r) => setTimeout(r, 300))
    const body = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'x'.repeat(3 * MiB) }] })
    const third = await fetch(`${rig.daemon.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${c}`, 'x-forwarded-for': '203.0.113.3' },
      body,
    })
    expect(third.status).toBe(200)
    // The two were stopped at their share (a body past it could never fit: 413), saying so.
    await waitFor(() => heldA.received() !== '' && heldB.received() !== '')
    for (const held of [heldA, heldB]) {
      expect(held.received()).toMatch(/^HTTP\/1\.1 413/)
      expect(held.received()).toContain('one client may hold 8 MiB')
      held.close()
    }
  })
})

describe('a buyer’s key has its own share of the upload spool', () => {
  it('refuses a buyer’s upload larger than a third of the spool before it is read; the operator’s is taken', async () => {
    const [key] = (await soldKeys()) as [string]
    const upload = (bearer: string) => {
      const form = new FormData()
      form.append('model', 'whisper-1')
      form.append('file', new Blob([Buffer.alloc(24 * MiB)], { type: 'audio/wav' }), 'long.wav')
      return fetch(`${rig.daemon.url}/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${bearer}`, 'x-forwarded-for': '203.0.113.9' },
        body: form,
      })
    }
    const refused = await upload(key)
    expect(refused.status).toBe(413)
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain(
      'larger than one key may hold in the upload spool (22 MiB)',
    )
    expect((await upload(rig.daemon.adminToken)).status).not.toBe(413)
  })
})
