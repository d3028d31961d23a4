import OpenAI, { APIError } from 'openai'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { startRig, waitFor, type GatewayRig } from './setup'

/**
 * Issue 41 through the real daemon and the official openai client: chat and completions are
 * forwarded to the llm on node1 (spec 1, 4.9) byte for byte, node1's llm unreachable is 502 saying
 * so (spec 1, 7), node1 not configured is 503 naming the settings, and an engine that comes up after
 * Tandem started is used within seconds, with no swap and no restart.
 */

const MODEL = 'sim/Qwen3-8B-Instruct'
const hi = [{ role: 'user' as const, content: 'hi' }]

/** What the client threw (fails the test when it resolved). */
async function failure(call: Promise<unknown>): Promise<APIError> {
  const err = await call.then(
    () => null,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(APIError)
  return err as APIError
}

const client = (rig: GatewayRig): OpenAI =>
  new OpenAI({ baseURL: `${rig.daemon.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 20_000 })

describe("node1's engine down when Tandem starts, coming up later", () => {
  let rig: GatewayRig
  beforeAll(async () => {
    rig = await startRig({}, { llmDown: true })
  })
  afterAll(() => rig?.stop())

  it('answers 502 saying the llm on node1 is unreachable and where, then serves the model once it is up', async () => {
    const err = await failure(client(rig).chat.completions.create({ model: MODEL, messages: hi }))
    expect(err.status).toBe(502)
    expect(err.code).toBe('upstream_unreachable')
    expect(err.message).toMatch(/^502 llm on node1 is unreachable at http:\/\/127\.0\.0\.1:\d+: /)
    expect(err.message).toContain(`:${rig.llm.port}`)

    await rig.llm.setFault('none')
    const answer = await client(rig).chat.completions.create({ model: MODEL, messages: hi })
    expect(answer.model).toBe(MODEL)
    // Learned from the engine within seconds: listed, and known by name (no swap, no restart).
    await vi.waitFor(async () => expect((await client(rig).models.list()).data.map((m) => m.id)).toContain(MODEL), {
      timeout: 10_000,
      interval: 250,
    })
    const view = (await (await rig.daemon.admin('/api/placements')).json()) as { placements: { served: string }[] }
    expect(view.placements.map((p) => p.served)).toEqual([MODEL])
    expect(rig.daemon.core.jobs.list('swap')).toEqual([])
  })
})

describe('node1 not configured', () => {
  let rig: GatewayRig
  beforeAll(async () => {
    rig = await startRig({ NODE1_HOST: '', NODE1_USER: '' })
  })
  afterAll(() => rig?.stop())

  it('answers 503 naming the settings to set, for a model no placement serves and for none', async () => {
    const err = await failure(client(rig).chat.completions.create({ model: 'anything', messages: hi }))
    expect(err.status).toBe(503)
    expect(err.message).toBe('503 llm is not configured: set NODE1_HOST and NODE1_USER (and LLM_PORT if not 8888)')
    const none = await fetch(`${rig.daemon.url}/v1/chat/completions`, { method: 'POST', body: '{"messages":[]}' })
    expect(none.status).toBe(503)
    expect(((await none.json()) as { error: { message: string } }).error.message).toMatch(/^llm is not configured/)
    expect(rig.llm.requests.filter((r) => r.method === 'POST')).toEqual([])
  })
})

describe('bodies forwarded byte for byte', () => {
  let rig: GatewayRig
  beforeAll(async () => {
    rig = await startRig()
    // A catalog entry for the model, launched as Tandem launches it: the key is one of its names.
    const add = await rig.daemon.admin('/api/models', {
      method: 'POST',
      body: JSON.stringify({ key: 'qwen8', name: 'Qwen3 8B', repo: MODEL }),
    })
    expect(add.status).toBe(200)
    rig.llm.setModel(`${MODEL},qwen8`)
  })
  afterAll(() => rig?.stop())

  /** The bytes the engine received for the last chat it answered. */
  const lastBody = (): string =>
    rig.llm.requests
      .filter((r) => r.path === '/v1/chat/completions')
      .at(-1)!
      .head.toString('utf8')

  /** Numbers as written, odd whitespace, a duplicate key, an unknown field; named by served name and by catalog key. */
  const bodies = (stream: boolean): string[] =>
    [MODEL, 'qwen8'].map(
      (model) =>
        `{ "model" :"${model}",\t"temperature":0.70 ,"max_tokens" : 2e3,\r\n "top_p":1.0,"temperature":0.70,` +
        `"x_vendor":{"keep":[1,2.50]},"messages":[{"role":"user","content":"hi"}]${stream ? ',"stream":true' : ''}}`,
    )

  it('non-streaming: the engine receives exactly the client’s bytes', async () => {
    for (const body of bodies(false)) {
      const res = await fetch(`${rig.daemon.url}/v1/chat/completions`, { method: 'POST', body })
      expect(res.status, await res.clone().text()).toBe(200)
      await res.json()
      expect(lastBody()).toBe(body)
    }
  })

  it('streaming: the engine receives exactly the client’s bytes (no stream_options spliced in)', async () => {
    for (const body of bodies(true)) {
      const res = await fetch(`${rig.daemon.url}/v1/chat/completions`, { method: 'POST', body })
      expect(res.status).toBe(200)
      expect(await res.text()).toContain('data: [DONE]')
      expect(lastBody()).toBe(body)
    }
  })

  it('a client asking for include_usage sees the usage chunk; one that does not, does not, and usage is still counted', async () => {
    const gateway = rig.daemon.core.modules.find((m) => m.name === 'gateway') as unknown as {
      requestLog: { totalCount: number }
    }
    const asked = await client(rig).chat.completions.create({
      model: MODEL,
      messages: hi,
      stream: true,
      stream_options: { include_usage: true },
    })
    const askedChunks = []
    for await (const c of asked) askedChunks.push(c)
    expect(askedChunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 3 } })

    const before = gateway.requestLog.totalCount
    const plain = await client(rig).chat.completions.create({ model: MODEL, messages: hi, stream: true })
    const plainChunks = []
    for await (const c of plain) plainChunks.push(c)
    expect(plainChunks.length).toBeGreaterThan(1)
    expect(plainChunks.every((c) => c.usage === undefined || c.usage === null)).toBe(true)
    expect(plainChunks.every((c) => c.choices.length > 0)).toBe(true)
    // Nothing was asked of the engine on the client's behalf, yet the tokens are counted exactly.
    expect(lastBody()).not.toContain('stream_options')
    await waitFor(() => gateway.requestLog.totalCount > before)
    const log = (await (await rig.daemon.admin('/api/gateway/requests?limit=1')).json()) as {
      requests: { completion_tokens: number | null; tokens_estimated: boolean }[]
    }
    expect(log.requests[0]).toMatchObject({ completion_tokens: 3, tokens_estimated: false })
  })
})
