import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { readSse, startDaemon, type TestDaemon } from '../../helpers/daemon'
import { DEMO_LOADED_REPO, DEMO_NODE1_ONLY, demoCachedModels } from '../../sim/demoState'
import { startFullSim, type FullSim } from '../../sim/full'
import { knownModel } from '../../sim/shims/hubModels.mjs'

/**
 * The demo's seeded state (test/sim/demoState.ts), through the real daemon: the bundled models'
 * configs and real-size weights are in the hub caches, so every model has a fit verdict and the
 * loaded one is on disk; a download ends with the weights' real size on every node.
 */
describe("the demo's seeded models: fit and disk", () => {
  let sim: FullSim
  let daemon: TestDaemon
  let dataDir: string
  const clock = new ManualClock(Date.now())
  /** The catalog's "about N GB" leaves out config.json, the tokenizer and directory entries: a few kB. */
  const SMALL_FILES_SLACK = 1024 * 1024

  interface Model {
    key: string
    repo: string
    mode: string
    loaded: boolean
    size_bytes: number
  }
  interface DiskModel {
    key: string
    on_disk: boolean
    nodes: { node: string; present: boolean; bytes: number | null }[]
  }
  const get = async <T>(pathname: string): Promise<T> => {
    const res = await daemon.admin(pathname)
    expect(res.status).toBe(200)
    return (await res.json()) as T
  }
  const bundled = async (): Promise<Model[]> =>
    (await get<(Model & { tags: string[] })[]>('/api/models')).filter((m) => m.tags.includes('bundled'))
  const disk = async (key: string): Promise<DiskModel> =>
    (await get<{ models: DiskModel[] }>('/api/models/disk-status')).models.find((m) => m.key === key)!

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-demo-fit-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({
      authorizedKeys: [key.publicKey],
      llmModel: DEMO_LOADED_REPO,
      cachedModels: demoCachedModels(),
    })
    for (const n of sim.cluster.nodes) {
      fs.writeFileSync(path.join(n.state, 'download_delay'), '0.02')
      fs.writeFileSync(path.join(n.state, 'download_steps'), '4')
    }
    daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0' }, clock, dataDir })
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('every bundled model has a config fixture whose weights are the catalog size', async () => {
    const models = await bundled()
    expect(models.length).toBeGreaterThanOrEqual(8)
    for (const m of models) expect(knownModel(m.repo)?.weights_bytes, m.repo).toBe(m.size_bytes)
  })

  it('every bundled model has a fit verdict in both layouts, and the three verdicts all show', async () => {
    const verdicts = new Set<string>()
    for (const m of await bundled())
      for (const mode of ['solo', 'cluster'] as const) {
        const fit = await get<{ verdict: string; notes: string[] }>(`/api/models/${m.key}/fit?mode=${mode}`)
        expect(fit.verdict, `${m.key} ${mode}: ${fit.notes.join('; ')}`).not.toBe('unknown')
        // The weights figure is the size on node1's disk, the KV cache one from the model's own config.json.
        expect(fit.notes.join('\n'), `${m.key} ${mode}`).toMatch(/size on disk/)
        expect(fit.notes.join('\n'), `${m.key} ${mode}`).toMatch(/KV cache: \d+ tokens/)
        verdicts.add(fit.verdict)
      }
    expect([...verdicts].sort()).toEqual(['fits', 'no_fit', 'tight'])
  })

  it('the loaded model is on disk, at its real size', async () => {
    const loaded = (await bundled()).find((m) => m.loaded)
    expect(loaded?.repo).toBe(DEMO_LOADED_REPO)
    const status = await disk(loaded!.key)
    expect(status.on_disk).toBe(true)
    for (const n of status.nodes) {
      expect(n.bytes).toBeGreaterThanOrEqual(loaded!.size_bytes)
      expect(n.bytes! - loaded!.size_bytes).toBeLessThan(SMALL_FILES_SLACK)
    }
  })

  it('a download ends with the weights at their expected size on every node, and the fit known', async () => {
    const model = (await bundled()).find((m) => m.repo === DEMO_NODE1_ONLY[0])!
    const before = await disk(model.key)
    expect(before.on_disk).toBe(false)
    const start = await daemon.admin('/api/download', {
      method: 'POST',
      body: JSON.stringify({ repo: model.repo, mode: 'cluster' }),
    })
    expect(start.status).toBe(200)
    const { job_id } = (await start.json()) as { job_id: string }
    const events = (await readSse(await daemon.admin(`/api/download/${job_id}/stream`))).map(
      (e) => JSON.parse(e.data || '{}') as { type?: string; state?: string },
    )
    expect(events.filter((e) => e.type === 'end')).toEqual([expect.objectContaining({ state: 'succeeded' })])
    const after = await disk(model.key)
    expect(after.on_disk).toBe(true)
    expect(after.nodes.map((n) => n.node)).toEqual(['node1', 'node2'])
    for (const n of after.nodes) {
      expect(n.bytes, n.node).toBeGreaterThanOrEqual(model.size_bytes)
      expect(n.bytes! - model.size_bytes, n.node).toBeLessThan(SMALL_FILES_SLACK)
    }
    const fit = await get<{ verdict: string }>(`/api/models/${model.key}/fit?mode=cluster`)
    expect(fit.verdict).not.toBe('unknown')
  })
})
