import crypto from 'node:crypto'
import http from 'node:http'
import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { startDaemon, type TestDaemon } from '../helpers/daemon'

/**
 * Issue 42 #1 and #5, as an attacker would try them on loopback: sockets that declare a 64 MiB
 * chat body and send one byte (or trickle one now and then) held the whole body budget, so every
 * other client got 503 for the 300 s body deadline; a 60 MB body was depth-scanned and parsed on
 * the main thread only to read `model` and `stream`. The daemon runs with the default 256 MiB
 * budget, a 2 s body idle window and a 6 s body deadline, so the case runs in seconds.
 */
const MiB = 1024 * 1024
const MODEL = 'sim/held-bodies'
const IDLE_S = 2
const DEADLINE_MS = 6000

/** An llm that serves one model and answers every call at once, keeping a hash of each body it got. */
interface Upstream {
  readonly port: number
  readonly hashes: string[]
  close(): Promise<void>
}

async function startUpstream(): Promise<Upstream> {
  const hashes: string[] = []
  const server = http.createServer((req, res) => {
    const hash = crypto.createHash('sha256')
    req.on('data', (c: Buffer) => hash.update(c))
    req.on('end', () => {
      res.setHeader('content-type', 'application/json')
      if (req.method === 'GET' && req.url === '/v1/models')
        return res.end(JSON.stringify({ object: 'list', data: [{ id: MODEL, object: 'model', owned_by: 'vllm' }] }))
      if (req.method === 'GET') return res.end('{"ok":true}')
      hashes.push(hash.digest('hex'))
      res.end(JSON.stringify({ id: 'c', object: 'chat.completion', model: MODEL, choices: [] }))
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    port: (server.address() as AddressInfo).port,
    hashes,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  }
}

/** A raw connection from `from` (a 127.0.0.0/8 alias) that records what comes back. */
interface Held {
  readonly socket: net.Socket
  received(): string
  closed(): boolean
}

async function holdBody(port: number, from: string, declared: number, headers = ''): Promise<Held> {
  const socket = net.connect({ port, host: '127.0.0.1', localAddress: from })
  let received = ''
  let closed = false
  socket.on('data', (c: Buffer) => (received += c.toString('latin1')))
  socket.on('error', () => undefined)
  socket.once('close', () => (closed = true))
  await new Promise<void>((r) => socket.once('connect', () => r()))
  socket.write(
    `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${headers}Content-Length: ${declared}\r\n\r\n{`,
  )
  return { socket, received: () => received, closed: () => closed }
}

async function waitFor(cond: () => boolean, ms: number): Promise<void> {
  const until = Date.now() + ms
  while (!cond()) {
    if (Date.now() > until) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 20))
  }
}

let up: Upstream
let d: TestDaemon
let port: number

const chat = (init: { secret?: string; body?: string } = {}): Promise<Response> =>
  fetch(`${d.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(init.secret ? { authorization: `Bearer ${init.secret}` } : {}) },
    body: init.body ?? JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hello' }] }),
  })

/** Ten chat calls from 127.0.0.1 while the attack holds: their statuses. */
async function probes(secret?: string): Promise<number[]> {
  const out: number[] = []
  for (let i = 0; i < 10; i++) out.push((await chat({ secret })).status)
  return out
}

/** The daemon against the upstream, with the default 256 MiB budget, the given body deadline and idle window. */
async function start(bodyTimeoutMs: number, idleS = IDLE_S): Promise<void> {
  d = await startDaemon({
    env: {
      NODE1_HOST: '127.0.0.1',
      NODE1_USER: 'sim',
      LLM_PORT: String(up.port),
      GATEWAY_BODY_BUDGET_MB: '256',
      GATEWAY_BODY_IDLE_S: String(idleS),
    },
    limits: { bodyTimeoutMs },
  })
  port = Number(new URL(d.url).port)
  // The router knows the model once the engine has been listed.
  for (let i = 0; i < 100 && (await chat()).status !== 200; i++) await new Promise((r) => setTimeout(r, 50))
}

beforeAll(async () => {
  up = await startUpstream()
  await start(DEADLINE_MS)
})
afterAll(async () => {
  await d?.stop()
  await up?.close()
})

describe('held and big request bodies (issue 42)', { timeout: 60_000 }, () => {
  it('two idle 64 MiB bodies leave chat working for everyone else, and are answered 408 and released', async () => {
    const held = [await holdBody(port, '127.0.0.2', 64 * MiB), await holdBody(port, '127.0.0.3', 64 * MiB)]
    await new Promise((r) => setTimeout(r, 200)) // their heads are read
    expect(await probes()).toEqual(Array(10).fill(200))
    // The operator's own token, too.
    const admin = await d.admin('/v1/chat/completions', {
      method: 'POST',
      body: JSON.stringify({ model: MODEL, messages: [] }),
    })
    expect(admin.status).toBe(200)
    // The idle window answers each with 408 in OpenAI's shape and closes the connection, well before the deadline.
    await waitFor(() => held.every((h) => h.closed()), DEADLINE_MS - 1000)
    for (const h of held) {
      expect(h.received()).toMatch(/^HTTP\/1\.1 408 /)
      expect(h.received()).toMatch(/sent nothing for 2 s/)
    }
  })

  it('a body declaring more than one client may hold is refused with 413 before a byte is read', async () => {
    const h = await holdBody(port, '127.0.0.2', 64 * MiB + 1)
    await waitFor(() => h.closed() || h.received().includes('\r\n\r\n'), 5000)
    expect(h.received()).toMatch(/^HTTP\/1\.1 413 /)
    h.socket.destroy()
  })

  it('a client trickling a byte within each idle window holds nothing and is cut at the body deadline', async () => {
    const held = [await holdBody(port, '127.0.0.4', 64 * MiB), await holdBody(port, '127.0.0.5', 64 * MiB)]
    const trickle = setInterval(
      () => {
        for (const h of held) if (!h.closed()) h.socket.write(' ')
      },
      (IDLE_S * 1000) / 2,
    )
    try {
      expect(await probes()).toEqual(Array(10).fill(200))
      await waitFor(() => held.every((h) => h.closed()), DEADLINE_MS + 3000)
    } finally {
      clearInterval(trickle)
    }
    for (const h of held) {
      expect(h.received()).toMatch(/^HTTP\/1\.1 408 /)
      expect(h.received()).toMatch(/did not arrive within 6 s/)
    }
  })

  it('with consumer keys, two keys holding idle bodies leave a third key and the operator working', async () => {
    const make = async (name: string): Promise<string> => {
      const res = await d.admin('/api/consumer-keys', { method: 'POST', body: JSON.stringify({ name }) })
      expect(res.status).toBe(200)
      return ((await res.json()) as { secret: string }).secret
    }
    const [a, b, c] = [await make('attacker a'), await make('attacker b'), await make('bystander')]
    const held = [
      await holdBody(port, '127.0.0.6', 64 * MiB, `Authorization: Bearer ${a}\r\n`),
      await holdBody(port, '127.0.0.7', 64 * MiB, `Authorization: Bearer ${b}\r\n`),
    ]
    await new Promise((r) => setTimeout(r, 200))
    expect(await probes(c)).toEqual(Array(10).fill(200))
    await waitFor(() => held.every((h) => h.closed()), DEADLINE_MS - 1000)
    for (const h of held) expect(h.received()).toMatch(/^HTTP\/1\.1 408 /)
    // Back to no keys for the rest of the file.
    const list = (await (await d.admin('/api/consumer-keys')).json()) as { keys: { id: string }[] }
    for (const k of list.keys) await d.admin(`/api/consumer-keys/${k.id}`, { method: 'DELETE' })
  })

  it('a 60 MB body goes upstream byte for byte without a JSON.parse over it on the main thread, one or four at once', async () => {
    const body = (n: number): Buffer =>
      Buffer.from(
        `{"messages":[{"role":"user","content":"${'y'.repeat(60 * 1000 * 1000)}"}],"seq":${n},"model":"${MODEL}"}`,
      )
    // Sending four 60 MB bodies from this process takes longer than the short deadline and idle window above.
    await d.stop()
    await start(300_000, 60)
    const parse = vi.spyOn(JSON, 'parse')
    try {
      for (const n of [1, 4]) {
        const bodies = Array.from({ length: n }, (_, i) => body(i))
        const before = up.hashes.length
        const answers = await Promise.all(bodies.map((b) => chat({ body: b.toString('latin1') })))
        const statuses = answers.map((a) => a.status)
        // One address may hold half the budget, a 60 MB body costs twice its size: one at a time fits.
        expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1)
        for (const s of statuses) expect([200, 503]).toContain(s)
        const sent = new Set(bodies.map((b) => crypto.createHash('sha256').update(b).digest('hex')))
        const got = up.hashes.slice(before)
        expect(got.length).toBe(statuses.filter((s) => s === 200).length)
        for (const h of got) expect(sent.has(h)).toBe(true)
      }
      const bigParses = parse.mock.calls.filter(([text]) => typeof text === 'string' && text.length > MiB)
      expect(bigParses.length).toBe(0)
    } finally {
      parse.mockRestore()
    }
  })
})
