import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { readSse, startDaemon, type TestDaemon } from '../../helpers/daemon'
import { startFullSim, type FullSim } from '../../sim/full'

/** Disk status, weights deletion and downloads through the real daemon, over real HTTP and SSH. */
describe('models disk and download routes', () => {
  let sim: FullSim
  let daemon: TestDaemon
  let dataDir: string
  const clock = new ManualClock(Date.now())
  const CACHED = 'Qwen/Qwen3-32B-FP8'
  const hub = (home: string, repo: string): string =>
    path.join(home, '.cache/huggingface/hub', `models--${repo.replace('/', '--')}`)
  // Response bodies are checked field by field with matchers; a loose type keeps that readable.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as Record<string, any> })

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-models-http-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({ authorizedKeys: [key.publicKey], cachedModels: { node1: [CACHED] } })
    for (const n of sim.cluster.nodes) {
      fs.writeFileSync(path.join(n.state, 'download_delay'), '0.05')
      fs.writeFileSync(path.join(n.state, 'download_steps'), '6')
    }
    daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0' }, clock, dataDir })
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('GET /api/models/disk-status covers every catalog model on its nodes', async () => {
    const keys = (await json(await daemon.admin('/api/models'))).body as unknown as { key: string; mode: string }[]
    const { status, body } = await json(await daemon.admin('/api/models/disk-status'))
    expect(status).toBe(200)
    expect(body.models.map((m: { key: string }) => m.key)).toEqual(keys.map((k) => k.key))
    for (const m of body.models as { key: string; nodes: { node: string }[] }[]) {
      const mode = keys.find((k) => k.key === m.key)!.mode
      expect(m.nodes.map((n) => n.node)).toEqual(mode === 'solo' ? ['node1'] : ['node1', 'node2'])
    }
    const cached = body.models.find((m: { key: string }) => m.key === 'qwen3-32b-fp8')
    expect(cached).toMatchObject({ on_disk: true, nodes: [{ node: 'node1', present: true, error: null }] })
    expect(cached.nodes[0].bytes).toBeGreaterThan(1024 * 1024)
    const probe = sim.cluster.node1.commands[sim.cluster.node1.commands.length - 1]!
    expect(probe).toContain('"${HF_HOME:-$HOME/.cache/huggingface}/hub/models--Qwen--Qwen3-32B-FP8"')
    expect(cached.nodes[0].path).toBe(hub(sim.cluster.node1.home, CACHED))
  })

  it('POST /api/download refuses a repo with shell metacharacters (400) and sends nothing', async () => {
    const before = sim.cluster.nodes.map((n) => n.commands.length)
    const res = await daemon.admin('/api/download', { method: 'POST', body: JSON.stringify({ repo: 'org/x;reboot' }) })
    expect(res.status).toBe(400)
    expect(sim.cluster.nodes.map((n) => n.commands.length)).toEqual(before)
  })

  it('a cluster download: {job_id}, 409 for a second one naming it, the stream to the end, the job record', async () => {
    const start = await json(
      await daemon.admin('/api/download', {
        method: 'POST',
        body: JSON.stringify({ repo: 'org/http-dl', mode: 'cluster' }),
      }),
    )
    expect(start.status).toBe(200)
    const id = start.body.job_id as string
    const second = await json(
      await daemon.admin('/api/download', { method: 'POST', body: JSON.stringify({ repo: 'org/other' }) }),
    )
    expect(second.status).toBe(409)
    expect(JSON.stringify(second.body)).toContain(id)
    // Deleting weights while a download runs is refused too.
    expect((await daemon.admin('/api/models/qwen3-32b-fp8/disk', { method: 'DELETE' })).status).toBe(409)

    const events = (await readSse(await daemon.admin(`/api/download/${id}/stream`)))
      .map((e) => JSON.parse(e.data || '{}') as { type?: string; phase?: string; state?: string })
      .filter((e) => e.type !== undefined)
    expect(events.filter((e) => e.type === 'phase').map((e) => e.phase)).toEqual([
      'Connecting',
      'Fetching 4 files',
      'Downloading',
      'Copying to peer nodes',
      'Done',
    ])
    expect(events[events.length - 1]).toMatchObject({ type: 'end', state: 'succeeded' })
    const job = await json(await daemon.admin(`/api/download/${id}`))
    expect(job.body).toMatchObject({ kind: 'download', state: 'succeeded', phase: 'Done' })
    // Done keeps the average rate of the last phase (the copy), not null.
    expect(job.body.progress).toMatchObject({ percent: 100, eta_s: 0 })
    expect(job.body.progress.rate).toBeGreaterThan(0)
    for (const n of sim.cluster.nodes) expect(fs.existsSync(hub(n.home, 'org/http-dl'))).toBe(true)
  })

  it('GET /api/download/{id} is 404 for an unknown id', async () => {
    expect((await daemon.admin('/api/download/download-000000000000')).status).toBe(404)
  })

  it('DELETE /api/models/{key}/disk removes the weights and records a connectivity event', async () => {
    const { status, body } = await json(await daemon.admin('/api/models/qwen3-32b-fp8/disk', { method: 'DELETE' }))
    expect(status).toBe(200)
    expect(body.deleted).toMatchObject([{ node: 'node1', path: hub(sim.cluster.node1.home, CACHED) }])
    expect(fs.existsSync(hub(sim.cluster.node1.home, CACHED))).toBe(false)
    const conn = (await json(await daemon.admin('/api/connectivity'))).body
    expect(
      conn.events.some(
        (e: { kind: string; source: string; subject: string }) =>
          e.kind === 'report' && e.source === 'disk-delete' && e.subject === 'node1',
      ),
    ).toBe(true)
  })
})

/** The same routes with node3 configured (NODES): disk status, a download to node3, refusals. */
describe('models disk and download routes with three nodes', () => {
  let sim: FullSim
  let daemon: TestDaemon
  let dataDir: string
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as Record<string, any> })
  const post = (url: string, body: unknown) => daemon.admin(url, { method: 'POST', body: JSON.stringify(body) })
  const hub3 = (repo: string): string =>
    path.join(sim.cluster.node('node3').hubDir, `models--${repo.replace('/', '--')}`)

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-models-http3-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({
      authorizedKeys: [key.publicKey],
      nodeCount: 3,
      launcherNodes: ['node1', 'node3'],
      llmModel: 'sim/first',
    })
    for (const n of sim.cluster.nodes) {
      fs.writeFileSync(path.join(n.state, 'download_delay'), '0.01')
      fs.writeFileSync(path.join(n.state, 'download_steps'), '4')
    }
    daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0', SWAP_ON_DEMAND: 'off' }, dataDir })
    for (const def of [
      { key: 'first', name: 'First', repo: 'sim/first' },
      { key: 'second', name: 'Second', repo: 'sim/second' },
      { key: 'third-dl', name: 'Third', repo: 'org/third-dl' },
    ])
      expect((await post('/api/models', def)).status).toBe(200)
    expect((await daemon.admin('/api/hardware?fresh=true')).status).toBe(200)
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('POST /api/download to a node that is not configured is 400 naming the configured ones', async () => {
    const before = sim.cluster.nodes.map((n) => n.commands.length)
    const res = await json(await post('/api/download', { repo: 'org/nowhere', target: 'node9' }))
    expect(res.status).toBe(400)
    expect(res.body.detail).toMatch(/node9 is not configured; the configured nodes are node1, node2, node3/)
    expect((await post('/api/download', { repo: 'org/nowhere', target: 'node0' })).status).toBe(400)
    expect(sim.cluster.nodes.map((n) => n.commands.length)).toEqual(before)
  })

  it('a download to node3 lands in its hub cache and GET /api/models/disk-status finds it there', async () => {
    const start = await json(await post('/api/download', { repo: 'org/third-dl', target: 'node3' }))
    expect(start.status).toBe(200)
    const job = await daemon.core.jobs.wait(start.body.job_id as string)
    expect(job.error).toBeNull()
    expect(job.result).toMatchObject({ target: 'node3', nodes: ['node3'] })
    expect(fs.existsSync(path.join(hub3('org/third-dl'), 'snapshots'))).toBe(true)
    const { status, body } = await json(await daemon.admin('/api/models/disk-status'))
    expect(status).toBe(200)
    for (const m of body.models as { nodes: { node: string }[] }[])
      expect(m.nodes.map((n) => n.node)).toContain('node3')
    const row = body.models.find((m: { key: string }) => m.key === 'third-dl')
    expect(row.nodes.find((n: { node: string }) => n.node === 'node3')).toMatchObject({
      present: true,
      error: null,
      path: hub3('org/third-dl'),
    })
  })

  it('DELETE /api/models/{key}/disk for a model placed on node3 is 409 naming the placement', async () => {
    const placed = await json(await post('/api/placements', { key: 'second', nodes: ['node3'] }))
    expect(placed.status, JSON.stringify(placed.body)).toBe(200)
    const job = await daemon.core.jobs.wait(placed.body.job_id as string)
    expect(job.state, job.error ?? '').toBe('succeeded')
    const res = await json(await daemon.admin('/api/models/second/disk', { method: 'DELETE' }))
    expect(res.status).toBe(409)
    expect(res.body.detail).toMatch(/second is placed \(node3\)/)
  })
})
