import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readSse } from '../../helpers/daemon'
import { startRig, type GatewayRig } from '../gateway/setup'

type Requests = { requests: { path: string; status: number; playground: boolean; streamed: boolean; bytes: number }[] }
type Upstreams = {
  upstreams: { name: string; state: string; latency_ms: number | null; detail: string | null }[]
  llm_model: string | null
}

// The Gateway view's live parts: playground calls in the request log, and each upstream's health.
describe('Gateway console', () => {
  let rig: GatewayRig
  beforeAll(async () => {
    rig = await startRig()
  })
  afterAll(async () => {
    await rig?.stop()
  })

  it('puts playground calls in the request log, marked as the playground', async () => {
    const chat = await rig.daemon.admin('/api/gateway/playground/chat', {
      method: 'POST',
      body: JSON.stringify({ prompt: 'hello' }),
    })
    expect(chat.status).toBe(200)
    await readSse(chat)
    const speech = await rig.daemon.admin('/api/gateway/playground/speech', {
      method: 'POST',
      body: JSON.stringify({ voice: 'alloy', input: 'Hello there' }),
    })
    expect(speech.status).toBe(200)
    await rig.tts.setFault('refused')
    const failed = await rig.daemon.admin('/api/gateway/playground/speech', {
      method: 'POST',
      body: JSON.stringify({ voice: 'alloy', input: 'Hello again' }),
    })
    await rig.tts.setFault('none')
    expect(failed.status).toBeGreaterThanOrEqual(500)

    const log = (await (await rig.daemon.admin('/api/gateway/requests?limit=10')).json()) as Requests
    const played = log.requests.filter((r) => r.playground)
    expect(played.map((r) => [r.path, r.status])).toEqual([
      ['/api/gateway/playground/speech', failed.status],
      ['/api/gateway/playground/speech', 200],
      ['/api/gateway/playground/chat', 200],
    ])
    expect(played[2]).toMatchObject({ streamed: true })
    expect(played[2]!.bytes).toBeGreaterThan(0)
    expect(played[1]!.bytes).toBeGreaterThan(44)
  })

  it('keeps LAN clients’ requests unmarked', async () => {
    const res = await fetch(`${rig.daemon.url}/v1/models`)
    expect(res.status).toBe(200)
    await res.text()
    const log = (await (await rig.daemon.admin('/api/gateway/requests?limit=1')).json()) as Requests
    expect(log.requests[0]).toMatchObject({ path: '/v1/models', playground: false })
  })

  it('reports every upstream up with a latency, and the model the llm serves', async () => {
    const res = (await (await rig.daemon.admin('/api/gateway/upstreams')).json()) as Upstreams
    expect(res.upstreams.map((u) => u.name).sort()).toEqual(['asr', 'embeddings', 'llm', 'tts', 'vector'])
    for (const u of res.upstreams) {
      expect(u.state, u.name).toBe('up')
      // Measured on this answer (null when the upstream does not answer), in tenths of a millisecond.
      expect(u.latency_ms, u.name).toEqual(expect.any(Number))
      expect(Math.round(u.latency_ms! * 10) / 10, u.name).toBe(u.latency_ms)
    }
    // The first model the simulated llm lists (test/sim/http/llm.ts).
    expect(res.llm_model).toBe('sim/Qwen3-8B-Instruct')
  })

  it('reports an upstream that stopped as down', async () => {
    await rig.embeddings.stop()
    const res = (await (await rig.daemon.admin('/api/gateway/upstreams')).json()) as Upstreams
    expect(res.upstreams.find((u) => u.name === 'embeddings')).toMatchObject({ state: 'down', latency_ms: null })
    expect(res.upstreams.find((u) => u.name === 'llm')?.state).toBe('up')
  })
})
