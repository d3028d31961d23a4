import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src-main/config/load'
import { ApiError } from '../../../src-main/contract/errors'
import type { ModelDef } from '../../../src-main/contract/models'
import type { JobEvent } from '../../../src-main/contract/system'
import { ManualClock } from '../../../src-main/lib/clock'
import type { CoreDeps } from '../../../src-main/platform/domainModule'
import { WeightsOnDisk } from '../../../src-main/models/disk'
import { Downloads } from '../../../src-main/models/downloads'
import type { CatalogEntry, CatalogReader, SwapStatus } from '../../../src-main/models/types'
import { createNodesModule, type NodesModule } from '../../../src-main/nodes/module'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { testCoreDeps } from '../../helpers/coreDeps'
import { startSimCluster, type SimCluster, type SimNode } from '../../sim/cluster'

const RECORDED_BYTES = 8.07e9

class FixedCatalog implements CatalogReader {
  constructor(private readonly entries: CatalogEntry[]) {}
  list(): readonly CatalogEntry[] {
    return this.entries
  }
  get(key: string): CatalogEntry {
    const e = this.entries.find((x) => x.def.key === key)
    if (!e) throw new ApiError('not_found', `no model ${key}`)
    return e
  }
  onChange(): void {}
}

const entry = (key: string, repo: string): CatalogEntry => ({
  def: { key, name: key, repo, engine_args: [], mode: 'cluster' } as ModelDef,
  tags: ['bundled'],
  bundled: true,
  effectiveKnobs: {},
  launchArgs: [],
})

/**
 * Where weights land and where disk status looks come from the same settings: node2's own SSH user
 * and port (NODE2_USER differs from node1's user here) and HF_HOME as each node's shell has it.
 */
describe('downloads follow each node’s settings (user, port, HF_HOME)', () => {
  let sim: SimCluster
  let nodes: NodesModule
  let deps: CoreDeps
  let dataDir: string
  let disk: WeightsOnDisk
  let downloads: Downloads
  const swap: SwapStatus = { loaded: () => null, busy: () => false }
  const folder = (n: SimNode, repo: string): string => path.join(n.hubDir, `models--${repo.replace('/', '--')}`)
  const phasesOf = async (id: string): Promise<string[]> => {
    const out: JobEvent[] = []
    for await (const ev of deps.jobs.events(id)) out.push(ev)
    return out.flatMap((e) => (e.type === 'phase' ? [e.phase] : []))
  }

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-dl-settings-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startSimCluster({
      authorizedKeys: [key.publicKey],
      node1: { hfHome: 'hf-one' },
      node2: { user: 'dgx', hfHome: 'models-cache' },
    })
    for (const n of sim.nodes) {
      fs.writeFileSync(path.join(n.state, 'download_delay'), '0.01')
      fs.writeFileSync(path.join(n.state, 'download_steps'), '4')
    }
    const config = loadConfig({ env: { DATA_DIR: dataDir, ...sim.daemonEnv(), MONITOR_INTERVAL_S: '0' } })
    deps = testCoreDeps({ config, clock: new ManualClock(Date.now()) })
    nodes = await createNodesModule(deps)
    const catalog = new FixedCatalog([entry('both-x', 'org/both-x'), entry('two-y', 'org/two-y')])
    disk = new WeightsOnDisk({ catalog, nodes, jobs: deps.jobs, swap, logger: deps.logger, clock: deps.clock })
    downloads = new Downloads({ config, nodes, jobs: deps.jobs, swap, logger: deps.logger })
  })

  afterAll(async () => {
    await deps?.jobs.stopAll()
    await nodes?.stop?.()
    await sim?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('the sim gives node2 its own user and HF_HOME, and no launcher checkout', () => {
    expect(nodes.targets.node2!.user).toBe('dgx')
    expect(nodes.targets.node1!.user).toBe('spark')
    expect(sim.node2.runLocal('printf %s "$HF_HOME"').stdout).toBe(path.dirname(sim.node2.hubDir))
    expect(fs.existsSync(path.join(sim.node2.home, 'spark-vllm-docker'))).toBe(false)
  })

  it('a download to both nodes lands in each node’s HF_HOME hub, where disk status finds it', async () => {
    const { job_id } = downloads.start({ repo: 'org/both-x', target: 'both' })
    const phases = await phasesOf(job_id)
    const job = deps.jobs.get(job_id)
    expect(job.error).toBeNull()
    expect(job.state).toBe('succeeded')
    expect(phases).toEqual(['Connecting', 'Fetching 4 files', 'Downloading', 'Copying to peer nodes', 'Done'])
    for (const n of sim.nodes) expect(fs.readdirSync(path.join(folder(n, 'org/both-x'), 'snapshots'))).toHaveLength(1)
    // Copied by node1 as node2's user, on node2's port, from node1's HF_HOME hub into node2's.
    const copy = sim.node1.commands.filter((c) => c.includes('rsync')).pop()!
    expect(copy).toContain(`-e 'ssh -p ${sim.node2.port} `)
    expect(copy).toContain(`'${folder(sim.node1, 'org/both-x')}' 'dgx@${sim.node2.address}:${sim.node2.hubDir}/'`)
    expect(job.log.some((l) => l.startsWith('Tandem copies to node2 itself'))).toBe(true)
    // Not in either home's default cache.
    for (const n of sim.nodes)
      expect(fs.existsSync(path.join(n.home, '.cache/huggingface/hub/models--org--both-x'))).toBe(false)
    const status = (await disk.status()).models.find((m) => m.key === 'both-x')!
    expect(status.on_disk).toBe(true)
    expect(status.nodes.map((n) => [n.node, n.path])).toEqual([
      ['node1', folder(sim.node1, 'org/both-x')],
      ['node2', folder(sim.node2, 'org/both-x')],
    ])
    for (const n of status.nodes) expect(n.bytes).toBeGreaterThanOrEqual(RECORDED_BYTES)
  })

  it('a download to node2 alone honours node2’s HF_HOME; disk status finds it there', async () => {
    const { job_id } = downloads.start({ repo: 'org/two-y', target: 'node2' })
    const job = await deps.jobs.wait(job_id)
    expect(job.error).toBeNull()
    expect(job.state).toBe('succeeded')
    expect(fs.existsSync(path.join(folder(sim.node2, 'org/two-y'), 'snapshots'))).toBe(true)
    expect(fs.existsSync(folder(sim.node1, 'org/two-y'))).toBe(false)
    const status = (await disk.status()).models.find((m) => m.key === 'two-y')!
    expect(status.nodes.map((n) => [n.node, n.present])).toEqual([
      ['node1', false],
      ['node2', true],
    ])
    expect(status.nodes[1]!.path).toBe(folder(sim.node2, 'org/two-y'))
  })

  it('deleting removes the weights from each node’s HF_HOME hub', async () => {
    const res = await disk.remove('both-x')
    expect(res.deleted.map((d) => [d.node, d.path])).toEqual([
      ['node1', folder(sim.node1, 'org/both-x')],
      ['node2', folder(sim.node2, 'org/both-x')],
    ])
    for (const n of sim.nodes) expect(fs.existsSync(folder(n, 'org/both-x'))).toBe(false)
  })
})
