import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startRig, waitFor, type GatewayRig } from './setup'

const MODEL = 'sim/Qwen3-8B-Instruct'
let rig: GatewayRig
let key: { id: string; secret: string }

const BODY = { model: MODEL, stream: true, messages: [{ role: 'user', content: 'count these five words' }] }

function post(url: string, body: unknown, secret?: string): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(secret ? { authorization: `Bearer ${secret}` } : {}) },
    body: JSON.stringify(body),
  })
}

interface Row {
  path: string
  key: string | null
  ttft_ms: number | null
  tokens_per_s: number | null
  prompt_tokens: number | null
  completion_tokens: number | null
  tokens_estimated: boolean
}

/** The log row of the request `send` makes (the row is added when the exchange closes, a moment after the answer). */
async function rowOf(send: () => Promise<unknown>): Promise<Row> {
  const log = rig.daemon.core.modules.find((m) => m.name === 'gateway') as unknown as {
    requestLog: { totalCount: number; list(n: number): Row[] }
  }
  const before = log.requestLog.totalCount
  await send()
  await waitFor(() => log.requestLog.totalCount > before)
  const res = await rig.daemon.admin('/api/gateway/requests?limit=1')
  return ((await res.json()) as { requests: Row[] }).requests[0]!
}

async function usage(): Promise<Record<string, number>> {
  const res = await rig.daemon.admin(`/api/consumer-keys/usage?hours=2&key_id=${key.id}`)
  const body = (await res.json()) as { totals: Record<string, number>[] }
  return body.totals[0] ?? {}
}

/** Ids differ per answer (chatcmpl-simN): everything else must match byte for byte. */
const sameIds = (s: string): string => s.replace(/chatcmpl-sim\d+/g, 'chatcmpl-simN')

beforeAll(async () => {
  rig = await startRig()
  const res = await rig.daemon.admin('/api/consumer-keys', {
    method: 'POST',
    body: JSON.stringify({ name: 'chat ui' }),
  })
  key = (await res.json()) as typeof key
})
afterAll(() => rig.stop())

describe('usage per key', () => {
  it('sends the body as it came, counts the usage the engine always sends, and gives the client the stream it asked for', async () => {
    // What the client gets from an engine that does not force usage into every stream.
    rig.llm.setForceUsage(false)
    let direct: string
    try {
      direct = await (await post(`http://127.0.0.1:${rig.llm.port}/v1/chat/completions`, BODY)).text()
    } finally {
      rig.llm.setForceUsage(true)
    }
    let relayed = ''
    const row = await rowOf(async () => {
      relayed = await (await post(`${rig.daemon.url}/v1/chat/completions`, BODY, key.secret)).text()
    })
    // Nothing spliced in: the engine (started with --enable-force-include-usage) sends usage unasked.
    expect(rig.llm.lastRequest).toEqual(BODY)
    expect(sameIds(relayed)).toBe(sameIds(direct))
    expect(relayed).not.toContain('"usage"')
    expect(row).toMatchObject({ key: 'chat ui', prompt_tokens: 4, completion_tokens: 6, tokens_estimated: false })
    expect(row.ttft_ms).not.toBeNull()
  })

  it('passes the usage event on when the client asked for it', async () => {
    const res = await post(
      `${rig.daemon.url}/v1/chat/completions`,
      { ...BODY, stream_options: { include_usage: true } },
      key.secret,
    )
    const text = await res.text()
    expect(text).toContain('"usage":{"prompt_tokens":4,"completion_tokens":6')
  })

  it('labels tokens as estimated when the upstream sends no usage', async () => {
    rig.llm.setStreamUsage(false)
    let row: Row
    try {
      row = await rowOf(async () => (await post(`${rig.daemon.url}/v1/chat/completions`, BODY, key.secret)).text())
    } finally {
      rig.llm.setStreamUsage(true)
    }
    expect(row).toMatchObject({ completion_tokens: 6, tokens_estimated: true, prompt_tokens: null })
  })

  it('takes tokens from a plain answer’s usage', async () => {
    const row = await rowOf(async () =>
      (await post(`${rig.daemon.url}/v1/chat/completions`, { ...BODY, stream: false }, key.secret)).json(),
    )
    expect(row).toMatchObject({ prompt_tokens: 4, completion_tokens: 6, ttft_ms: null })
  })

  it('counts characters synthesized', async () => {
    const row = await rowOf(async () => {
      const res = await post(`${rig.daemon.url}/v1/audio/speech`, { input: 'Twelve chars', voice: 'alloy' }, key.secret)
      expect(res.status).toBe(200)
      await res.arrayBuffer()
    })
    expect(row).toMatchObject({ key: 'chat ui', path: '/v1/audio/speech' })
  })

  it('keeps it per key per hour: requests, errors, tokens, estimates apart, streams, characters', async () => {
    await rowOf(() => post(`${rig.daemon.url}/v1/chat/completions`, 'not json', key.secret).then((r) => r.text()))
    const t = await usage()
    expect(t).toMatchObject({
      requests: 6,
      errors: 1,
      prompt_tokens: 12,
      completion_tokens: 24,
      estimated_completion_tokens: 6,
      streams: 3,
      speech_characters: 12,
    })
    expect(t.ttft_ms_sum).toBeGreaterThan(0)
  })

  it('names the caller on every request log row', async () => {
    const row = await rowOf(async () =>
      (await post(`${rig.daemon.url}/v1/chat/completions`, { ...BODY, stream: false }, rig.daemon.adminToken)).json(),
    )
    expect(row.key).toBe('(admin)')
  })
})
