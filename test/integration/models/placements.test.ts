import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SimNodeName } from '../../sim/cluster'
import type { ModelsModule } from '../../../src-main/models/module'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { startFullSim, type FullSim } from '../../sim/full'

interface PlacementRow {
  id: string
  key: string | null
  served: string
  nodes: string[]
  head: string
  state: string
  reason: string | null
}
interface NodeRow {
  name: string
  placement_id: string | null
}

/**
 * Placements end to end (docs/placements.md): the real daemon over real SSH driving the sim's
 * launcher and docker on three nodes, each with a launcher checkout; an operator through
 * /api/placements and a LAN client through /v1, each request answered by the engine on the head
 * of the placement its `model` names.
 */
describe('placements on a three-node sim', () => {
  let sim: FullSim
  let daemon: TestDaemon
  let dataDir: string

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as Record<string, any> })
  const waitFor = async (cond: () => boolean | Promise<boolean>, what: string): Promise<void> => {
    for (let i = 0; i < 1000; i++) {
      if (await cond()) return
      await new Promise((r) => setTimeout(r, 10))
    }
    throw new Error(`never happened: ${what}`)
  }
  const chat = (model: string) =>
    fetch(`${daemon.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello there' }] }),
    })
  /** Chat requests the engine on a node has seen. */
  const chatsOn = (node: SimNodeName) =>
    sim.engine(node).requests.filter((r) => r.path === '/v1/chat/completions').length
  /** A chat naming `model` answered 200 by `node`'s engine, and by no other. */
  const answeredBy = async (model: string, node: SimNodeName): Promise<void> => {
    const all = ['node1', 'node2', 'node3'] as const
    const before = all.map((n) => chatsOn(n))
    const res = await chat(model)
    expect(res.status, await res.clone().text()).toBe(200)
    expect(((await res.json()) as { model: string }).model).toBe(model)
    expect(all.map((n, i) => chatsOn(n) - (before[i] as number))).toEqual(all.map((n) => (n === node ? 1 : 0)))
  }
  const router = () => (daemon.core.modules.find((m) => m.name === 'models') as unknown as ModelsModule).swap
  const placements = async () => {
    const r = await json(await daemon.admin('/api/placements'))
    expect(r.status).toBe(200)
    return r.body as { placements: PlacementRow[]; nodes: NodeRow[] }
  }
  /** Starts a placement job; the HTTP answer as it came. */
  const place = async (body: Record<string, unknown>) =>
    json(await daemon.admin('/api/placements', { method: 'POST', body: JSON.stringify(body) }))
  const placeAndWait = async (body: Record<string, unknown>) => {
    const r = await place(body)
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    return daemon.core.jobs.wait(r.body.job_id as string)
  }
  const freshHardware = async () => expect((await daemon.admin('/api/hardware?fresh=true')).status).toBe(200)
  /** Commands a node ran since `from` that start or stop an engine. */
  const engineCommands = (node: SimNodeName, from: number) =>
    sim.cluster
      .node(node)
      .commands.slice(from)
      .filter((c) => /launch-cluster\.sh|docker (stop|rm|kill|run -d)/.test(c))

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-placements-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({
      authorizedKeys: [key.publicKey],
      nodeCount: 3,
      launcherNodes: ['node1', 'node2', 'node3'],
      llmModel: 'sim/first',
      // 64 attention heads: tensor parallel 2 divides them.
      cachedModels: { node2: ['Qwen/Qwen3-32B-FP8'] },
    })
    daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0', SWAP_ON_DEMAND: 'off' }, dataDir })
    const add = async (def: Record<string, unknown>) =>
      expect((await daemon.admin('/api/models', { method: 'POST', body: JSON.stringify(def) })).status).toBe(200)
    await add({ key: 'first', name: 'First', repo: 'sim/first' })
    await add({ key: 'second', name: 'Second', repo: 'sim/second' })
    await add({ key: 'third', name: 'Third', repo: 'sim/third' })
    await add({ key: 'broken', name: 'Broken', repo: 'sim/broken' })
    await add({ key: 'qwen32', name: 'Qwen3 32B', repo: 'Qwen/Qwen3-32B-FP8' })
    // The cluster-link addresses and reachability the placements are checked against.
    await freshHardware()
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('two models at once: node1 keeps its model, node3 gets another, each request goes to its own engine', async () => {
    const job = await placeAndWait({ key: 'second', nodes: ['node3'] })
    expect(job.state, job.error ?? '').toBe('succeeded')

    const view = await placements()
    expect(view.placements.map((p) => [p.id, p.key, p.served, p.nodes, p.state]).sort()).toEqual([
      // Found answering at start, with no record of how it was launched.
      ['node1', 'first', 'sim/first', ['node1'], 'unknown'],
      ['node3', 'second', 'sim/second', ['node3'], 'ready'],
    ])
    expect(view.nodes.map((n) => [n.name, n.placement_id])).toEqual([
      ['node1', 'node1'],
      ['node2', null],
      ['node3', 'node3'],
    ])
    const listed = (await json(await fetch(`${daemon.url}/v1/models`))).body.data as { id: string }[]
    expect(listed.map((m) => m.id)).toEqual(expect.arrayContaining(['sim/first', 'sim/second']))

    await answeredBy('sim/first', 'node1')
    await answeredBy('sim/second', 'node3')
    const completionsOn = (node: SimNodeName) =>
      sim.engine(node).requests.filter((r) => r.path === '/v1/completions').length
    const before = completionsOn('node3')
    const completion = await fetch(`${daemon.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'second', prompt: 'hello', stream: true }),
    })
    expect(completion.status).toBe(200)
    expect(await completion.text()).toContain('data: [DONE]')
    expect(completionsOn('node3') - before).toBe(1)

    // Not placed: forwarded to node1's llm as it is, which answers for itself.
    const node1Chats = chatsOn('node1')
    const unplaced = await json(await chat('third'))
    expect(unplaced.status).toBe(404)
    expect(unplaced.body.error.message).toBe('The model `third` does not exist.')
    expect(chatsOn('node1')).toBe(node1Chats + 1)
  })

  it('a taken node without displace is refused with nothing stopped; with displace its model is replaced', async () => {
    const from = sim.cluster.node('node3').commands.length
    const refused = await place({ key: 'third', nodes: ['node3'] })
    expect(refused.status).toBe(409)
    expect(refused.body.detail).toMatch(/node3 is taken by sim\/second \(node3\); send displace: true/)
    expect(engineCommands('node3', from)).toEqual([])
    await answeredBy('sim/second', 'node3')

    sim.engine('node3').holdLoads(true)
    let job
    try {
      const started = await place({ key: 'third', nodes: ['node3'], displace: true })
      expect(started.status, JSON.stringify(started.body)).toBe(200)
      await waitFor(() => sim.engine('node3').loading === 'sim/third', 'node3 loads sim/third')
      // The job touches node3 alone: node1's model answers at once, the displaced one is held.
      await answeredBy('sim/first', 'node1')
      const held = chat('sim/second')
      await waitFor(() => router().held === 1, 'the request naming sim/second is held')
      sim.engine('node3').releaseLoads()
      job = await daemon.core.jobs.wait(started.body.job_id as string)
      // Its model was replaced while it waited.
      expect((await held).status).toBe(404)
    } finally {
      sim.engine('node3').holdLoads(false)
      sim.engine('node3').releaseLoads()
    }
    expect(job.state, job.error ?? '').toBe('succeeded')
    expect((await placements()).placements.find((p) => p.id === 'node3')).toMatchObject({
      key: 'third',
      served: 'sim/third',
      state: 'ready',
    })
    await answeredBy('sim/third', 'node3')
    expect((await chat('sim/second')).status).toBe(404)
  })

  it("a node lost under its placement: shown lost, served while its engine answers, 503 with Retry-After once it is silent too; node1's keeps answering", async () => {
    await sim.cluster.node('node3').down()
    try {
      await freshHardware()
      const lost = (await placements()).placements.find((p) => p.id === 'node3')
      expect(lost).toMatchObject({ state: 'lost', reason: 'node3 is unreachable' })
      // SSH is down, the engine answers: requests go on (routing asks the engine, not SSH).
      await answeredBy('sim/third', 'node3')
      await sim.engine('node3').setFault('refused')
      let res = await chat('sim/third')
      // The first may still try the engine (502) and makes Tandem look again; then 503.
      for (let i = 0; i < 100 && res.status !== 503; i++) {
        await new Promise((r) => setTimeout(r, 50))
        res = await chat('sim/third')
      }
      expect(res.status).toBe(503)
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/node3 is unreachable/)
      await sim.engine('node3').setFault('none')
      await answeredBy('sim/first', 'node1')
      const from = sim.cluster.node('node1').commands.length
      const refused = await place({ key: 'second', nodes: ['node3'], displace: true })
      expect(refused.status).toBe(409)
      expect(refused.body.detail).toMatch(/node3 is unreachable.*nothing was stopped/)
      expect(engineCommands('node1', from)).toEqual([])
    } finally {
      await sim.cluster.node('node3').up()
    }
    await freshHardware()
    await waitFor(
      async () => (await placements()).placements.find((p) => p.id === 'node3')?.state === 'ready',
      'node3 serves again',
    )
    // Routing follows the engines' own word (read every 3 s), not the SSH view above: wait for the watch to see it.
    await waitFor(async () => (await chat('sim/third')).status === 200, "node3's engine answering again")
    await answeredBy('sim/third', 'node3')
  })

  it("a placement that fails to load relaunches only what it displaced: node1's engine is untouched", async () => {
    const node1From = sim.cluster.node('node1').commands.length
    sim.engine('node3').failLoads('sim/broken')
    try {
      const job = await placeAndWait({ key: 'broken', nodes: ['node3'], displace: true })
      expect(job.state).toBe('failed')
      expect(job.error).toMatch(/placing Broken on node3 failed: .*rolled back to Third/)
    } finally {
      sim.engine('node3').failLoads(null)
    }
    const view = await placements()
    expect(view.placements.map((p) => [p.id, p.served, p.state]).sort()).toEqual([
      ['node1', 'sim/first', 'unknown'],
      ['node3', 'sim/third', 'ready'],
    ])
    await answeredBy('sim/third', 'node3')
    await answeredBy('sim/first', 'node1')
    expect(engineCommands('node1', node1From)).toEqual([])
  })

  it('DELETE stops a placement: its node is free and its model is not placed any more', async () => {
    const r = await json(await daemon.admin('/api/placements/node3', { method: 'DELETE' }))
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    const job = await daemon.core.jobs.wait(r.body.job_id as string)
    expect(job.state, job.error ?? '').toBe('succeeded')
    const view = await placements()
    expect(view.placements.map((p) => p.id)).toEqual(['node1'])
    expect(view.nodes.find((n) => n.name === 'node3')?.placement_id).toBeNull()
    // Not placed any more: node1's llm answers for itself.
    const gone = await json(await chat('sim/third'))
    expect(gone.status).toBe(404)
    expect(gone.body.error.message).toBe('The model `sim/third` does not exist.')
    await expect(fetch(`http://127.0.0.3:${sim.llm.port}/v1/models`)).rejects.toThrow()
    await answeredBy('sim/first', 'node1')
  })

  it("a tensor-parallel size the model's attention heads cannot divide is refused in vLLM's words, nothing stopped", async () => {
    const from = sim.cluster.node('node1').commands.length
    const r = await place({ key: 'qwen32', nodes: ['node2', 'node3', 'node1'], displace: true, confirm_no_fit: true })
    expect(r.status).toBe(400)
    expect(r.body.detail).toContain(
      'Total number of attention heads (64) must be divisible by tensor parallel size (3).',
    )
    expect(engineCommands('node1', from)).toEqual([])
    await answeredBy('sim/first', 'node1')
  })

  it('tensor parallel across node2+node3: the launcher on node2 gets -n with both cluster-link addresses, node2 serves', async () => {
    const from = sim.cluster.node('node2').commands.length
    const node3From = sim.cluster.node('node3').commands.length
    const job = await placeAndWait({ key: 'qwen32', nodes: ['node2', 'node3'], confirm_no_fit: true })
    expect(job.state, `${job.error ?? ''}\n${job.log.join('\n')}`).toBe('succeeded')
    const launches = sim.cluster
      .node('node2')
      .commands.slice(from)
      .filter((c) => c.includes('launch-cluster.sh') && c.includes("'serve'"))
    expect(launches).toHaveLength(1)
    expect(launches[0]).toMatch(/'-n' '127\.0\.0\.2,127\.0\.0\.3'/)
    expect(launches[0]).toMatch(/'--tensor-parallel-size' '2'/)
    expect(
      sim.cluster
        .node('node3')
        .commands.slice(node3From)
        .some((c) => /launch-cluster\.sh.*'serve'/.test(c)),
    ).toBe(false)
    const view = await placements()
    expect(view.placements.find((p) => p.id === 'node2+node3')).toMatchObject({
      key: 'qwen32',
      served: 'Qwen/Qwen3-32B-FP8',
      nodes: ['node2', 'node3'],
      head: 'node2',
      state: 'ready',
    })
    await answeredBy('Qwen/Qwen3-32B-FP8', 'node2')
    await answeredBy('sim/first', 'node1')
  })

  it('a tensor-parallel placement that lost its worker stops on its head alone, which frees the head; the worker is verified when it answers', async () => {
    await sim.cluster.node('node3').down()
    try {
      await freshHardware()
      expect((await placements()).placements.find((p) => p.id === 'node2+node3')).toMatchObject({
        state: 'lost',
        reason: 'node3 is unreachable',
      })
      // Its head's engine still answers: requests go on while the worker's SSH is down.
      await answeredBy('Qwen/Qwen3-32B-FP8', 'node2')
      const from = sim.cluster.node('node2').commands.length
      const r = await json(await daemon.admin('/api/placements/node2+node3', { method: 'DELETE' }))
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      const job = await daemon.core.jobs.wait(r.body.job_id as string)
      // Truthful (issue 47): node3's container cannot be verified gone, so the stop says so.
      expect(job.state).toBe('failed')
      expect(job.error).toBe(
        'node2+node3 is not verified stopped (node3 could not be reached); Tandem retries the stop when it answers',
      )
      expect(engineCommands('node2', from)).toEqual([
        expect.stringMatching(/launch-cluster\.sh '--solo' '--name' 'vllm_node' 'stop'/),
      ])
      const view = await placements()
      expect(view.placements.map((p) => [p.id, p.state])).toEqual([
        ['node1', 'unknown'],
        ['node2+node3', 'lost'],
      ])
      await expect(fetch(`http://127.0.0.2:${sim.llm.port}/v1/models`)).rejects.toThrow()
      // Still listed until verified: its requests get 503 with Retry-After, not another engine.
      expect((await chat('Qwen/Qwen3-32B-FP8')).status).toBe(503)
      await answeredBy('sim/first', 'node1')
    } finally {
      await sim.cluster.node('node3').up()
    }
    // node3 answers: the reconciler verifies its container gone and the placement reads stopped.
    await freshHardware()
    await waitFor(
      async () => (await placements()).placements.every((p) => p.id !== 'node2+node3'),
      'the stop verified on node3',
    )
    expect((await chat('Qwen/Qwen3-32B-FP8')).status).toBe(404)
  })
})
