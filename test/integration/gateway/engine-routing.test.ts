import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import OpenAI, { APIError } from 'openai'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import type { SimNodeName } from '../../sim/cluster'
import { startFullSim, type FullSim } from '../../sim/full'

/**
 * Issue 41 on a three-node sim over real SSH: the gateway routes on what each engine says in its
 * /v1/models, learned again every few seconds, never on SSH. An engine that comes up behind
 * Tandem's back is used by every name it lists; a hung SSH connection stops no chat while the
 * engine answers; a placed model whose engine is silent is 503 with Retry-After.
 */
describe('routing on what the engines say', () => {
  let sim: FullSim
  let daemon: TestDaemon
  let dataDir: string
  let client: OpenAI

  const chatsOn = (node: SimNodeName) =>
    sim.engine(node).requests.filter((r) => r.path === '/v1/chat/completions').length
  /** A chat naming `model`, answered 200 by `node`'s engine. */
  const answeredBy = async (model: string, node: SimNodeName): Promise<void> => {
    const before = chatsOn(node)
    const answer = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] })
    expect(answer.choices[0]?.message.content).toBeTruthy()
    expect(chatsOn(node)).toBe(before + 1)
  }

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-engine-routing-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({ authorizedKeys: [key.publicKey], nodeCount: 3, llmModel: 'sim/first' })
    daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0', SWAP_ON_DEMAND: 'off' }, dataDir })
    client = new OpenAI({ baseURL: `${daemon.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 20_000 })
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('uses an engine that came up on node3 after Tandem started within seconds, by each name it serves', async () => {
    // An engine started by hand on node3, serving two names (`--served-model-name sim/late late-alias`).
    sim.engine('node3').setModel('sim/late,late-alias')
    await sim.engine('node3').setFault('none')
    await vi.waitFor(() => answeredBy('sim/late', 'node3'), { timeout: 10_000, interval: 250 })
    await answeredBy('late-alias', 'node3')
    await answeredBy('sim/first', 'node1')
    const listed = (await client.models.list()).data.map((m) => m.id)
    expect(listed).toEqual(expect.arrayContaining(['sim/first', 'sim/late', 'late-alias']))
  })

  it('answers a placed model whose engine went silent with 503 and Retry-After, naming it', async () => {
    await sim.engine('node3').setFault('refused')
    try {
      const err = await vi.waitFor(
        async () => {
          const e = await client.chat.completions
            .create({ model: 'sim/late', messages: [{ role: 'user', content: 'hi' }] })
            .then(
              () => null,
              (x: unknown) => x,
            )
          expect(e).toBeInstanceOf(APIError)
          expect((e as APIError).status).toBe(503)
          return e as APIError
        },
        { timeout: 10_000, interval: 250 },
      )
      expect(err.message).toBe(
        '503 sim/late is placed on node3, and none answers now (node3: the engine on node3 does not answer); retry later',
      )
      expect(err.headers?.get('retry-after')).toBe('30')
    } finally {
      await sim.engine('node3').setFault('none')
    }
  })

  it('keeps chat on node1 working while SSH to node1 hangs and its engine answers', async () => {
    await sim.cluster.node('node1').hang()
    try {
      const hw = (await (await daemon.admin('/api/hardware?fresh=true')).json()) as Record<string, { status: string }>
      expect(hw.node1?.status).toBe('unreachable')
      await answeredBy('sim/first', 'node1')
      await answeredBy('sim/first', 'node1')
    } finally {
      await sim.cluster.node('node1').up()
    }
  })
})
