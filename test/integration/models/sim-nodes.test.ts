import net from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { shq } from '../../../src-main/ssh/quote'
import { startFullSimKit, type SimKit } from '../../sim/testkit'
import type { FullSim } from '../../sim/full'

/**
 * The simulator with more than two nodes (docs/placements.md): each node on its own loopback
 * address, a launcher checkout on the placement's head, engines on each head's address at the same
 * llm port, workers' containers on the workers. Driven over real SSH, as the daemon drives nodes.
 */
describe('a three-node sim', () => {
  let kit: SimKit & { full: FullSim }
  const node = (name: 'node1' | 'node2' | 'node3') => kit.sim.node(name)
  const run = async (name: 'node1' | 'node2' | 'node3', command: string) =>
    kit.pool.exec(kit.target(node(name)), command, { timeoutMs: 30_000 })
  const launcher = (args: string): string => `cd ~/spark-vllm-docker && ./launch-cluster.sh ${args}`
  const served = async (address: string): Promise<string[] | 'refused'> => {
    try {
      const res = await fetch(`http://${address}:${kit.full.llm.port}/v1/models`)
      return ((await res.json()) as { data: { id: string }[] }).data.map((d) => d.id)
    } catch {
      return 'refused'
    }
  }
  /** Waits for what an address serves to become `want` (the engine loads after the serve event). */
  const servedBecomes = async (address: string, want: string[] | 'refused'): Promise<void> => {
    for (let i = 0; i < 200; i++) {
      if (JSON.stringify(await served(address)) === JSON.stringify(want)) return
      await new Promise((r) => setTimeout(r, 25))
    }
    expect(await served(address)).toEqual(want)
  }
  const refuses = (host: string, port: number): Promise<boolean> =>
    new Promise((resolve) => {
      const s = net.connect(port, host)
      s.once('connect', () => {
        s.destroy()
        resolve(false)
      })
      s.once('error', () => resolve(true))
    })

  beforeAll(async () => {
    kit = await startFullSimKit({ nodeCount: 3, launcherNodes: ['node3'], llmModel: 'org/first' })
  })
  afterAll(async () => kit?.close())

  it('each node answers SSH on its own loopback address, and only there', async () => {
    expect(kit.sim.nodes.map((n) => [n.name, n.address])).toEqual([
      ['node1', '127.0.0.1'],
      ['node2', '127.0.0.2'],
      ['node3', '127.0.0.3'],
    ])
    for (const [name, host] of [
      ['node1', 'spark-a1'],
      ['node2', 'spark-b2'],
      ['node3', 'spark-c3'],
    ] as const) {
      const r = await run(name, 'hostname')
      expect(r.stdout.trim()).toBe(host)
    }
    expect(await refuses('127.0.0.1', node('node3').port)).toBe(true)
    expect(kit.full.env()).toMatchObject({
      NODE2_HOST: '127.0.0.2',
      NODES: `spark@127.0.0.3:${node('node3').port}`,
    })
  })

  it("each node reports its own cluster-link address the way the launcher's autodiscover finds it", async () => {
    const link = `ibdev2netdev | awk '/Up\\)/ {print $5}' | while read -r d; do ip -o -f inet addr show "$d"; done`
    for (const [name, address] of [
      ['node1', '127.0.0.1'],
      ['node3', '127.0.0.3'],
    ] as const) {
      const lines = (await run(name, link)).stdout.trim().split('\n')
      expect(lines[0]).toMatch(new RegExp(`^5: enp1s0f1np1 +inet ${address.replace(/\./g, '\\.')}/24 `))
    }
    node('node3').setFlag('cluster_link_down', true)
    expect((await run('node3', link)).stdout).toBe('')
    node('node3').setFlag('cluster_link_down', false)
  })

  it("the launcher on node3 serves an engine on node3's address while node1's keeps serving", async () => {
    await servedBecomes('127.0.0.1', ['org/first'])
    expect(await served('127.0.0.3')).toBe('refused')
    const r = await run('node3', launcher(`--solo -d exec vllm serve ${shq('org/third')} --port ${kit.full.llm.port}`))
    expect(r.code, r.stdout + r.stderr).toBe(0)
    await servedBecomes('127.0.0.3', ['org/third'])
    expect(await served('127.0.0.1')).toEqual(['org/first'])
    expect(await served('127.0.0.2')).toBe('refused')

    expect((await run('node3', launcher('--solo stop'))).code).toBe(0)
    await servedBecomes('127.0.0.3', 'refused')
    expect(await served('127.0.0.1')).toEqual(['org/first'])
  })

  it('-n with the head first: the head serves, each worker runs its container, stop ends them all', async () => {
    const running = async (name: 'node1' | 'node2' | 'node3'): Promise<string> =>
      (await run(name, `docker ps --format '{{.Names}}'`)).stdout
    const r = await run(
      'node3',
      launcher(`-n 127.0.0.3,127.0.0.2 -d exec vllm serve org/pair --tensor-parallel-size 2`),
    )
    expect(r.code, r.stdout + r.stderr).toBe(0)
    expect(r.stdout).toContain('Worker Nodes: 127.0.0.2')
    await servedBecomes('127.0.0.3', ['org/pair'])
    expect(await running('node2')).toContain('vllm_node')
    expect(await running('node1')).toContain('vllm_node')
    expect(await served('127.0.0.2')).toBe('refused')

    expect((await run('node3', launcher('-n 127.0.0.3,127.0.0.2 stop'))).code).toBe(0)
    await servedBecomes('127.0.0.3', 'refused')
    expect(await running('node2')).not.toContain('vllm_node')
    // node1 was not in the list: its engine is untouched.
    expect(await served('127.0.0.1')).toEqual(['org/first'])
  })

  it('a node the sim does not have cannot be a worker', async () => {
    const r = await run('node3', launcher('-n 127.0.0.3,127.0.0.9 -d exec vllm serve org/x'))
    expect(r.code).toBe(1)
    expect(r.stdout).toContain('SSH to 127.0.0.9: FAILED')
  })
})
