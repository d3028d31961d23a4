import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { invokeMethod } from '../../../src-main/app/invoke'
import type { CallContext } from '../../../src-main/contract/define'
import type { StatusView } from '../../../src-main/contract/nodes'
import type { ServiceRecord } from '../../../src-main/contract/services'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { startFullSim, type FullSim } from '../../sim/full'

/**
 * Every placement is a service (docs/placements.md, Services): node2's placement is `llm@node2`
 * with its own row in the status and the services list, its logs read from its engine's container
 * on node2, and its restart a placement job on node2 (never a `docker restart`), through HTTP and IPC.
 */
describe('placements as services on the sim', () => {
  let sim: FullSim
  let daemon: TestDaemon
  let dataDir: string

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as Record<string, any> })
  const list = async (): Promise<ServiceRecord[]> => {
    const r = await json(await daemon.admin('/api/services'))
    expect(r.status).toBe(200)
    return r.body.services as ServiceRecord[]
  }
  const status = async (): Promise<StatusView> => (await json(await daemon.admin('/api/status'))).body as StatusView
  const ipc = (): CallContext => ({
    via: 'ipc',
    signal: new AbortController().signal,
    session: { begin() {}, end() {}, authenticated: true },
  })
  const node2Commands = (from: number): string[] => sim.cluster.node('node2').commands.slice(from)

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-placement-services-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({
      authorizedKeys: [key.publicKey],
      launcherNodes: ['node1', 'node2'],
      llmModel: 'sim/first',
    })
    daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0', SWAP_ON_DEMAND: 'off' }, dataDir })
    const add = async (def: Record<string, unknown>) =>
      expect((await daemon.admin('/api/models', { method: 'POST', body: JSON.stringify(def) })).status).toBe(200)
    await add({ key: 'first', name: 'First', repo: 'sim/first' })
    // node2 runs asr and tts (12 GiB) beside the OS: vLLM's default 0.9 would not be free there at start.
    await add({ key: 'second', name: 'Second', repo: 'sim/second', engine_args: ['--gpu-memory-utilization', '0.85'] })
    await add({ key: 'greedy', name: 'Greedy', repo: 'sim/second' })
    expect((await daemon.admin('/api/hardware?fresh=true')).status).toBe(200)
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('a single-model cluster lists llm, asr and tts as before, with no placement rows', async () => {
    expect((await list()).map((s) => [s.name, s.placement])).toEqual([
      ['llm', null],
      ['asr', null],
      ['tts', null],
    ])
    expect((await status()).placements).toEqual([])
  })

  it('a placement that other processes crowd out is refused with what holds the memory', async () => {
    const r = await json(
      await daemon.admin('/api/placements', {
        method: 'POST',
        body: JSON.stringify({ key: 'greedy', nodes: ['node2'] }),
      }),
    )
    expect(r.status).toBe(409)
    expect(r.body.detail).toMatch(
      /node2: [\d.]+ GB is held by other processes .* 0\.9 × [\d.]+ GB = [\d.]+ GB cannot be reserved/,
    )
  })

  it("node2's placement is the service llm@node2: its own row after the llm, in the list and the status", async () => {
    const r = await json(
      await daemon.admin('/api/placements', {
        method: 'POST',
        body: JSON.stringify({ key: 'second', nodes: ['node2'] }),
      }),
    )
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    expect((await daemon.core.jobs.wait(r.body.job_id as string)).state).toBe('succeeded')

    const services = await list()
    expect(services.map((s) => s.name)).toEqual(['llm', 'llm@node2', 'asr', 'tts'])
    const engine = services[1]!
    expect(engine).toMatchObject({
      label: 'Healthy',
      configured: true,
      container_state: 'running',
      model: 'sim/second',
      node: 'node2',
      custom: false,
      placement: { id: 'node2', key: 'second', served: 'sim/second', nodes: ['node2'], state: 'ready' },
    })
    const { nodes, llm } = daemon.core.config
    expect(engine.upstream_url).toBe(`http://${nodes.node2!.host}:${llm.port}`)
    expect(services[0]).toMatchObject({ name: 'llm', model: 'sim/first', node: 'node1', placement: null })

    const st = await status()
    expect(st.placements.map((p) => [p.name, p.label, p.model, p.placement.id])).toEqual([
      ['llm@node2', 'Healthy', 'sim/second', 'node2'],
    ])
  })

  it("its logs are its engine's container on node2, through HTTP and IPC", async () => {
    const from = sim.cluster.node('node2').commands.length
    const r = await json(await daemon.admin('/api/services/llm@node2/logs?tail=50'))
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    expect(r.body).toMatchObject({ name: 'llm@node2', container: engineContainer() })
    expect(r.body.lines.length).toBeGreaterThan(0)
    expect(node2Commands(from).some((c) => /docker logs --tail '?50'? '?[\w-]+'?/.test(c))).toBe(true)

    const viaIpc = (await invokeMethod(
      daemon.core.dispatcher,
      'serviceLogs',
      { name: 'llm@node2', tail: 5 },
      ipc(),
    )) as { name: string; lines: string[] }
    expect(viaIpc.name).toBe('llm@node2')
    expect(viaIpc.lines.length).toBeGreaterThan(0)
  })

  it('restart re-places it on node2 as a placement job (the launcher, not docker restart); start and stop are refused', async () => {
    const from = sim.cluster.node('node2').commands.length
    const r = await json(await daemon.admin('/api/services/llm@node2/restart', { method: 'POST' }))
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    expect(r.body).toMatchObject({ name: 'llm@node2', action: 'restart', ok: true })
    const jobId = /\(job ([^)]+)\)/.exec(r.body.detail as string)?.[1]
    expect(jobId, r.body.detail as string).toBeDefined()
    expect((await daemon.core.jobs.wait(jobId!)).state).toBe('succeeded')
    const ran = node2Commands(from)
    expect(ran.some((c) => c.includes('launch-cluster.sh'))).toBe(true)
    expect(ran.some((c) => /docker restart/.test(c))).toBe(false)
    expect(sim.cluster.node('node1').commands.some((c) => /docker restart/.test(c))).toBe(false)
    const after = (await list()).find((s) => s.name === 'llm@node2')
    expect(after).toMatchObject({ label: 'Healthy', placement: { state: 'ready' } })
    expect(after?.recent_changes.length).toBeGreaterThan(0)

    for (const action of ['stop', 'start'])
      expect((await daemon.admin(`/api/services/llm@node2/${action}`, { method: 'POST' })).status).toBe(409)
    await expect(
      invokeMethod(daemon.core.dispatcher, 'serviceAction', { name: 'llm@node2', action: 'stop' }, ipc()),
    ).rejects.toThrow(/llm@node2 is a placement/)
  })

  it('a placement that is not placed is no service, and a malformed name is no such name: 404 both', async () => {
    expect((await daemon.admin('/api/services/llm@node3/logs')).status).toBe(404)
    const bad = await json(await daemon.admin('/api/services/llm@nodeX/logs'))
    expect(bad).toMatchObject({ status: 404, body: { code: 'not_found', detail: 'no such name: llm@nodeX' } })
  })

  function engineContainer(): string {
    return daemon.core.config.llm.container
  }
})
