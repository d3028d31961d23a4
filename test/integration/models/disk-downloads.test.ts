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
import { diskHandlers } from '../../../src-main/models/diskHandlers'
import { Downloads } from '../../../src-main/models/downloads'
import type { CatalogEntry, CatalogReader, SwapStatus } from '../../../src-main/models/types'
import { createNodesModule, type NodesModule } from '../../../src-main/nodes/module'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { testCoreDeps } from '../../helpers/coreDeps'
import { startSimCluster, type SimCluster, type SimNode } from '../../sim/cluster'

const MiB = 1024 * 1024
/** What the recorded Xet output declares: 8.07 GB over 50 s of its own clock. */
const RECORDED_BYTES = 8.07e9
const RECORDED_SECONDS = 50

/** A catalog of fixed entries: the disk and download parts only read it. */
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

const entry = (def: Partial<ModelDef> & Pick<ModelDef, 'key'>): CatalogEntry => ({
  def: { name: def.key, engine_args: [], mode: 'solo', ...def } as ModelDef,
  tags: [def.local_path ? 'local' : 'bundled'],
  bundled: true,
  effectiveKnobs: {},
  launchArgs: [],
})

describe('weights on disk and downloads against the simulated cluster', () => {
  let sim: SimCluster
  let nodes: NodesModule
  let deps: CoreDeps
  let dataDir: string
  let localDir: string
  const clock = new ManualClock(Date.now())
  const swap = { loadedKey: null as string | null, swapping: false }
  const swapStatus: SwapStatus = {
    loaded: () =>
      swap.loadedKey ? { key: swap.loadedKey, served: swap.loadedKey, mode: 'solo', since: 0, layout: null } : null,
    busy: () => swap.swapping,
  }
  let disk: WeightsOnDisk
  let downloads: Downloads
  let handlers: ReturnType<typeof diskHandlers>

  const hub = (n: SimNode, repo: string): string => path.join(n.hubDir, `models--${repo.replace('/', '--')}`)
  const duBytes = (dir: string): number => Number(/^(\d+)/.exec(execDu(dir))![1])
  const execDu = (dir: string): string => sim.node1.runLocal(`du -sb -- '${dir}'`).stdout
  const tune = (n: SimNode, delay: number, steps: number): void => {
    fs.writeFileSync(path.join(n.state, 'download_delay'), String(delay))
    fs.writeFileSync(path.join(n.state, 'download_steps'), String(steps))
  }
  /** Every event of a job until it ends. */
  const drain = async (id: string): Promise<JobEvent[]> => {
    const out: JobEvent[] = []
    for await (const ev of deps.jobs.events(id)) out.push(ev)
    return out
  }
  const untilPhase = async (id: string, phase: string): Promise<void> => {
    for await (const ev of deps.jobs.events(id)) if (ev.type === 'phase' && ev.phase === phase) return
    throw new Error(`job ${id} ended before phase ${phase}`)
  }
  const conflict = async (p: () => unknown): Promise<ApiError> => {
    try {
      await p()
    } catch (e) {
      expect(e).toBeInstanceOf(ApiError)
      expect((e as ApiError).status).toBe(409)
      return e as ApiError
    }
    throw new Error('expected a 409')
  }
  const running = (n: SimNode, repo: string): string =>
    n.runLocal(`ps -eo pid,args | grep -F ${`'hf-download.sh ${repo}'`} | grep -v grep || true`).stdout.trim()

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-models-disk-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startSimCluster({
      authorizedKeys: [key.publicKey],
      cachedModels: { node1: ['org/solo-a', 'org/cluster-b', 'org/loaded-e'], node2: ['org/cluster-b', 'org/half-c'] },
    })
    localDir = path.join(sim.root, 'models', 'local-d')
    fs.mkdirSync(localDir, { recursive: true })
    fs.writeFileSync(path.join(localDir, 'model.safetensors'), Buffer.alloc(3 * MiB))
    for (const n of sim.nodes) tune(n, 0.01, 4)
    const config = loadConfig({ env: { DATA_DIR: dataDir, ...sim.daemonEnv(), MONITOR_INTERVAL_S: '0' } })
    deps = testCoreDeps({ config, clock })
    nodes = await createNodesModule(deps)
    const catalog = new FixedCatalog([
      entry({ key: 'solo-a', repo: 'org/solo-a', mode: 'solo' }),
      entry({ key: 'cluster-b', repo: 'org/cluster-b', mode: 'cluster' }),
      entry({ key: 'half-c', repo: 'org/half-c', mode: 'both' }),
      entry({ key: 'local-d', local_path: localDir, mode: 'solo' }),
      entry({ key: 'loaded-e', repo: 'org/loaded-e', mode: 'solo' }),
      entry({ key: 'absent-f', repo: 'org/absent-f', mode: 'cluster' }),
    ])
    const logger = deps.logger
    disk = new WeightsOnDisk({ catalog, nodes, jobs: deps.jobs, swap: swapStatus, logger, clock })
    downloads = new Downloads({ config, nodes, jobs: deps.jobs, swap: swapStatus, logger })
    handlers = diskHandlers({ disk, downloads, jobs: deps.jobs })
  })

  afterAll(async () => {
    await deps?.jobs.stopAll()
    await nodes?.stop?.()
    await sim?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('probes every model on its nodes with one command per node, $HOME in double quotes', async () => {
    const before = sim.nodes.map((n) => n.commands.length)
    const status = await disk.status()
    expect(sim.nodes.map((n, i) => n.commands.length - before[i]!)).toEqual([1, 1])
    const byKey = Object.fromEntries(status.models.map((m) => [m.key, m]))
    expect(byKey['solo-a']!.nodes.map((n) => n.node)).toEqual(['node1'])
    expect(byKey['solo-a']!).toMatchObject({ on_disk: true })
    expect(byKey['solo-a']!.nodes[0]!.bytes).toBe(duBytes(hub(sim.node1, 'org/solo-a')))
    expect(byKey['cluster-b']!.nodes.map((n) => [n.node, n.present])).toEqual([
      ['node1', true],
      ['node2', true],
    ])
    // On node2 only: not on disk for a model that runs across both nodes.
    expect(byKey['half-c']!.on_disk).toBe(false)
    expect(byKey['half-c']!.nodes.map((n) => n.present)).toEqual([false, true])
    expect(byKey['absent-f']!.nodes.every((n) => !n.present && n.bytes === null && n.error === null)).toBe(true)
    expect(byKey['local-d']!.nodes[0]).toMatchObject({ node: 'node1', present: true, path: localDir })
    expect(byKey['local-d']!.nodes[0]!.bytes).toBe(duBytes(localDir))
    // The path as the node resolved it.
    expect(byKey['solo-a']!.nodes[0]!.path).toBe(hub(sim.node1, 'org/solo-a'))

    const probe = sim.node1.commands[sim.node1.commands.length - 1]!
    expect(probe).toContain('"${HF_HOME:-$HOME/.cache/huggingface}/hub/models--org--solo-a"')
    expect(probe).not.toMatch(/'\$(HOME|\{HF_HOME)/)
    expect(probe).toContain(`'${localDir}'`)
  })

  it('bytesOn answers per node from the last probe, and probes when it is stale', async () => {
    await disk.status()
    const n = sim.node2.commands.length
    expect(await disk.bytesOn('cluster-b', 'node2')).toBe(duBytes(hub(sim.node2, 'org/cluster-b')))
    expect(sim.node2.commands.length).toBe(n)
    clock.advance(120_000)
    expect(await disk.bytesOn('absent-f', 'node2')).toBeNull()
    expect(sim.node2.commands.length).toBe(n + 1)
  })

  it('deleting a cluster model removes it on both nodes and records connectivity events', async () => {
    const res = await handlers.deleteWeights({ key: 'cluster-b' }, ctx())
    expect(res.deleted.map((d) => d.node)).toEqual(['node1', 'node2'])
    expect(res.deleted[0]!.bytes).toBeGreaterThan(MiB)
    for (const n of sim.nodes) expect(fs.existsSync(hub(n, 'org/cluster-b'))).toBe(false)
    const rm = sim.node2.commands[sim.node2.commands.length - 1]!
    expect(rm).toContain('d="${HF_HOME:-$HOME/.cache/huggingface}/hub/models--org--cluster-b"')
    expect(res.deleted[1]!.path).toBe(hub(sim.node2, 'org/cluster-b'))
    expect(rm).toContain('rm -rf -- "$d"')
    const events = nodes.connectivity.view().events.filter((e) => e.kind === 'report' && e.source === 'disk-delete')
    expect(events.map((e) => e.subject).sort()).toEqual(['node1', 'node2'])
    // A solo model only on node1; node2 is not asked.
    const n2 = sim.node2.commands.length
    expect((await disk.remove('solo-a')).deleted.map((d) => d.node)).toEqual(['node1'])
    expect(sim.node2.commands.length).toBe(n2)
    expect(fs.existsSync(hub(sim.node1, 'org/solo-a'))).toBe(false)
  })

  it('refuses a local model, the loaded model, during a swap (409) and a bad repo (400), sending nothing', async () => {
    const before = sim.nodes.map((n) => n.commands.length)
    expect((await conflict(() => disk.remove('local-d'))).message).toMatch(/local model/)
    swap.loadedKey = 'loaded-e'
    expect((await conflict(() => disk.remove('loaded-e'))).message).toMatch(/loaded model/)
    swap.loadedKey = null
    swap.swapping = true
    expect((await conflict(() => disk.remove('loaded-e'))).message).toMatch(/swap/)
    expect((await conflict(() => downloads.start({ repo: 'org/any' }))).message).toMatch(/swap/)
    swap.swapping = false
    for (const repo of ['org/x;id', 'org/$(id)', "org/a'b", 'org/a b', '../etc', 'org/--x'])
      expect(() => downloads.start({ repo })).toThrow(expect.objectContaining({ status: 400 }))
    expect(sim.nodes.map((n) => n.commands.length)).toEqual(before)
    expect(fs.existsSync(localDir)).toBe(true)
    expect(fs.existsSync(hub(sim.node1, 'org/loaded-e'))).toBe(true)
  })

  it('a solo download runs hf-download.sh on node1 and writes the weights, with phases and progress', async () => {
    const { job_id } = await handlers.startDownload({ repo: 'org/fresh-g', mode: 'solo' }, ctx())
    const events = await drain(job_id)
    const job = await handlers.getDownload({ id: job_id }, ctx())
    expect(job).toMatchObject({ state: 'succeeded', kind: 'download', result: { target: 'node1', nodes: ['node1'] } })
    const phases = events.flatMap((e) => (e.type === 'phase' ? [e.phase] : []))
    expect(phases).toEqual(['Connecting', 'Fetching 4 files', 'Downloading', 'Done'])
    const progress = events.flatMap((e) => (e.type === 'progress' ? [e.progress] : []))
    // The Xet bars (the sim replays the recorded hub CLI output): bytes, rate and ETA while it runs.
    const running = progress.filter((p) => p.percent !== null && p.percent > 0 && p.percent < 100)
    expect(running.length).toBeGreaterThan(3)
    for (const p of running) {
      expect(p.bytes_total).toBe(RECORDED_BYTES)
      expect(p.bytes_done).toBeGreaterThan(0)
      expect(p.rate).toBe(161e6)
      expect(p.eta_s).toBeGreaterThan(0)
    }
    const last = progress[progress.length - 1]!
    expect(last).toMatchObject({ percent: 100, eta_s: 0, bytes_done: RECORDED_BYTES, bytes_total: RECORDED_BYTES })
    // The finished record keeps the average rate.
    expect(job.progress).toMatchObject({ percent: 100, rate: Math.round(RECORDED_BYTES / RECORDED_SECONDS) })
    expect(job.log).toContain('Done downloading org/fresh-g.')
    // One line per state change and each bar once at its end, without tqdm's cursor movements.
    expect(job.log.filter((l) => l.startsWith('Reconstruction complete: 100%'))).toHaveLength(1)
    // Two bytes-written lines (the phase change, the end); stdout text arriving between stderr redraws may add the last redraw before it.
    const writtenLines = job.log.filter((l) => /\| *\d[\d.]*[kMG]?B \/ /.test(l)).length
    expect(writtenLines).toBeGreaterThanOrEqual(2)
    expect(writtenLines).toBeLessThanOrEqual(3)
    expect(job.log.some((l) => l.includes('\x1b'))).toBe(false)
    expect(fs.statSync(path.join(hub(sim.node1, 'org/fresh-g'), 'snapshots')).isDirectory()).toBe(true)
    expect(duBytes(hub(sim.node1, 'org/fresh-g'))).toBeGreaterThanOrEqual(RECORDED_BYTES)
    expect(fs.existsSync(hub(sim.node2, 'org/fresh-g'))).toBe(false)
    const cmd = sim.node1.commands.find((c) => c.includes('hf-download.sh'))!
    expect(cmd).toContain("setsid ./hf-download.sh 'org/fresh-g' </dev/null")
    expect(cmd).toContain('cd "$HOME/spark-vllm-docker"')
  })

  it("a cluster download copies to node2 with node2's user, port and hub path", async () => {
    const { job_id } = downloads.start({ repo: 'org/both-h', mode: 'cluster' })
    const events = await drain(job_id)
    expect(deps.jobs.get(job_id).state).toBe('succeeded')
    const phases = events.flatMap((e) => (e.type === 'phase' ? [e.phase] : []))
    expect(phases).toEqual(['Connecting', 'Fetching 4 files', 'Downloading', 'Copying to peer nodes', 'Done'])
    const copying = events.filter(
      (e) =>
        e.type === 'progress' &&
        e.seq > events.find((x) => x.type === 'phase' && x.phase === 'Copying to peer nodes')!.seq,
    )
    expect(copying.length).toBeGreaterThan(0)
    // node2's SSH port is not 22 (loopback in the sim): the launcher's own copy could not reach it.
    const t = nodes.targets.node2!
    const cmd = sim.node1.commands.filter((c) => c.includes('hf-download.sh')).pop()!
    expect(cmd).toContain("setsid ./hf-download.sh 'org/both-h' </dev/null")
    const copy = sim.node1.commands.filter((c) => c.includes('rsync')).pop()!
    expect(copy).toContain(`-e 'ssh -p ${t.port} -o BatchMode=yes -o ConnectTimeout=20'`)
    expect(copy).toContain(`'${hub(sim.node1, 'org/both-h')}' '${t.user}@${t.host}:${sim.node2.hubDir}/'`)
    for (const n of sim.nodes) expect(fs.readdirSync(path.join(hub(n, 'org/both-h'), 'snapshots'))).toHaveLength(1)
    const status = await disk.status()
    expect(status.models.find((m) => m.key === 'absent-f')!.on_disk).toBe(false)
  })

  it("a node2 download runs node1's launcher script on node2, which has no launcher checkout", async () => {
    expect(fs.existsSync(path.join(sim.node2.home, 'spark-vllm-docker'))).toBe(false)
    const n1 = sim.node1.commands.length
    const { job_id } = downloads.start({ repo: 'org/only-two', target: 'node2' })
    const job = await deps.jobs.wait(job_id)
    expect(job.error).toBeNull()
    expect(job).toMatchObject({ state: 'succeeded', phase: 'Done', result: { target: 'node2', nodes: ['node2'] } })
    // node1 is only read from: the script, never run there.
    const onNode1 = sim.node1.commands.slice(n1)
    expect(onNode1).toHaveLength(1)
    expect(onNode1[0]).toContain('base64')
    expect(onNode1[0]).not.toContain('setsid')
    const run = sim.node2.commands.filter((c) => c.includes('hf-download.sh')).pop()!
    expect(run).toContain("setsid bash ./hf-download.sh 'org/only-two' </dev/null")
    expect(fs.existsSync(hub(sim.node2, 'org/only-two'))).toBe(true)
    expect(fs.existsSync(hub(sim.node1, 'org/only-two'))).toBe(false)
    expect(fs.existsSync(path.join(sim.node2.home, 'spark-vllm-docker'))).toBe(false)
  })

  it('a second download is refused (409 naming the running one), and so is deleting weights meanwhile', async () => {
    tune(sim.node1, 0.2, 40)
    const { job_id } = downloads.start({ repo: 'org/slow-i' })
    await untilPhase(job_id, 'Downloading')
    const second = await conflict(() => downloads.start({ repo: 'org/other' }))
    expect(second.message).toContain(job_id)
    const del = await conflict(() => disk.remove('loaded-e'))
    expect(del.message).toContain(job_id)
    // Cancel stops the remote process group, not only the channel.
    expect(running(sim.node1, 'org/slow-i')).not.toBe('')
    deps.jobs.cancel(job_id)
    const done = await deps.jobs.wait(job_id)
    expect(done.state).toBe('cancelled')
    expect(running(sim.node1, 'org/slow-i')).toBe('')
    tune(sim.node1, 0.01, 4)
  })

  it('getDownload and streamDownload answer 404 for a job that is not a download', async () => {
    const other = deps.jobs.start('update', 'not a download', async () => undefined)
    await deps.jobs.wait(other.id)
    await expect(handlers.getDownload({ id: other.id }, ctx())).rejects.toMatchObject({ status: 404 })
    expect(() => handlers.streamDownload({ id: other.id }, ctx())).toThrow(/no download/)
    expect(() => handlers.streamDownload({ id: 'download-nope' }, ctx())).toThrow(/no job/)
  })

  it("a failing script fails the job with its phase and the script's message", async () => {
    sim.node1.setFlag('hub_down', true)
    const { job_id } = downloads.start({ repo: 'org/unreachable-hub' })
    const job = await deps.jobs.wait(job_id)
    sim.node1.setFlag('hub_down', false)
    expect(job.state).toBe('failed')
    expect(job.error).toMatch(/failed on node1 during "Connecting" \(exit status 1\)/)
    expect(job.log.some((l) => l.includes('ConnectionError'))).toBe(true)
  })

  it('a script that goes silent fails the job after the idle deadline and is stopped on the node', async () => {
    const config = loadConfig({ env: { DATA_DIR: dataDir, ...sim.daemonEnv(), MONITOR_INTERVAL_S: '0' } })
    const impatient = new Downloads({
      config,
      nodes,
      jobs: deps.jobs,
      swap: swapStatus,
      logger: deps.logger,
      // Past the replaying hub CLI's start-up on a busy machine; well short of its 5 s pause.
      idleTimeoutMs: 1500,
    })
    tune(sim.node1, 5, 2)
    const { job_id } = impatient.start({ repo: 'org/silent-k' })
    const job = await deps.jobs.wait(job_id)
    tune(sim.node1, 0.01, 4)
    expect(job.state).toBe('failed')
    expect(job.error).toMatch(/no output from node1 for .* during "Downloading"; stopped/)
    expect(running(sim.node1, 'org/silent-k')).toBe('')
  })

  it('a peer that cannot be reached during the copy fails the job in "Copying to peer nodes"', async () => {
    sim.node1.setFlag('peer_unreachable', true)
    const { job_id } = downloads.start({ repo: 'org/no-peer', target: 'both' })
    const job = await deps.jobs.wait(job_id)
    sim.node1.setFlag('peer_unreachable', false)
    expect(job.state).toBe('failed')
    expect(job.error).toMatch(
      /^rsync failed on node1 during "Copying to peer nodes" \(exit status 255\): ssh: connect to host .* No route to host; node1 copies over SSH: spark@127\.0\.0\.2 port \d+ must accept node1's key$/,
    )
    expect(job.log.some((l) => /^ssh: connect to host .* No route to host$/.test(l))).toBe(true)
  })

  it('a node that is down: its entries carry the error, the other node still answers', async () => {
    await sim.node2.down()
    const status = await disk.status()
    await sim.node2.up()
    clock.advance(30_000) // past the pool's memory of the unreachable node
    const cluster = status.models.find((m) => m.key === 'half-c')!
    expect(cluster.on_disk).toBe(false)
    expect(cluster.nodes[1]).toMatchObject({ node: 'node2', present: false, bytes: null })
    expect(cluster.nodes[1]!.error).toMatch(/refused|closed|unreachable/i)
    expect(status.models.find((m) => m.key === 'loaded-e')!.nodes[0]).toMatchObject({ present: true, error: null })
    expect((await disk.status()).models.find((m) => m.key === 'half-c')!.nodes[1]!.error).toBeNull()
  })

  it('node1 dropping mid-download fails the job with its phase and log, without hanging', async () => {
    tune(sim.node1, 0.2, 40)
    const { job_id } = downloads.start({ repo: 'org/dropped-j' })
    await untilPhase(job_id, 'Downloading')
    await sim.node1.down()
    const job = await deps.jobs.wait(job_id)
    expect(job.state).toBe('failed')
    expect(job.error).toMatch(/^node1 (dropped the connection|became unreachable) during "Downloading"/)
    expect(job.log).toContain("Downloading model 'org/dropped-j' using uvx...")
    // The orphaned script on the (simulated) node: stop it, by its pids, so nothing outlives the test.
    const pids = running(sim.node1, 'org/dropped-j')
      .split('\n')
      .map((l) => Number(l.trim().split(/\s+/)[0]))
      .filter((p) => Number.isInteger(p) && p > 1)
    for (const p of pids) {
      try {
        process.kill(p, 'SIGKILL')
      } catch {
        // already gone
      }
    }
    await sim.node1.up()
  })
})

function ctx() {
  return {
    via: 'ipc' as const,
    signal: new AbortController().signal,
    session: { begin() {}, end() {}, authenticated: true },
  }
}

/** Three nodes (NODES names node3): disk status, downloads and deletion reach every configured node. */
describe('weights on disk and downloads on a three-node sim', () => {
  let sim: SimCluster
  let nodes: NodesModule
  let deps: CoreDeps
  let dataDir: string
  const clock = new ManualClock(Date.now())
  const placed = new Map<string, string[]>()
  const swapStatus: SwapStatus = {
    loaded: () => null,
    busy: () => false,
    placementsOf: (key) => placed.get(key) ?? [],
  }
  let disk: WeightsOnDisk
  let downloads: Downloads

  const hub = (n: SimNode, repo: string): string => path.join(n.hubDir, `models--${repo.replace('/', '--')}`)
  const node3 = (): SimNode => sim.node('node3')
  const commandCounts = (): number[] => sim.nodes.map((n) => n.commands.length)

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-models-disk3-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startSimCluster({
      authorizedKeys: [key.publicKey],
      nodeCount: 3,
      cachedModels: { node1: ['org/solo-a', 'org/placed-p'], node3: ['org/three-a', 'org/placed-p'] },
    })
    for (const n of sim.nodes) {
      fs.writeFileSync(path.join(n.state, 'download_delay'), '0.01')
      fs.writeFileSync(path.join(n.state, 'download_steps'), '4')
    }
    const config = loadConfig({ env: { DATA_DIR: dataDir, ...sim.daemonEnv(), MONITOR_INTERVAL_S: '0' } })
    deps = testCoreDeps({ config, clock })
    nodes = await createNodesModule(deps)
    const catalog = new FixedCatalog([
      entry({ key: 'solo-a', repo: 'org/solo-a', mode: 'solo' }),
      entry({ key: 'three-a', repo: 'org/three-a', mode: 'solo' }),
      entry({ key: 'placed-p', repo: 'org/placed-p', mode: 'solo' }),
      entry({ key: 'cluster-c', repo: 'org/cluster-c', mode: 'cluster' }),
      entry({ key: 'three-dl', repo: 'org/three-dl', mode: 'solo' }),
    ])
    disk = new WeightsOnDisk({ catalog, nodes, jobs: deps.jobs, swap: swapStatus, logger: deps.logger, clock })
    downloads = new Downloads({ config, nodes, jobs: deps.jobs, swap: swapStatus, logger: deps.logger })
  })

  afterAll(async () => {
    await deps?.jobs.stopAll()
    await nodes?.stop?.()
    await sim?.close()
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('disk status lists node3 for every model, one command per node, and bytesOn answers from node3', async () => {
    const before = commandCounts()
    const status = await disk.status()
    expect(commandCounts().map((c, i) => c - before[i]!)).toEqual([1, 1, 1])
    const byKey = Object.fromEntries(status.models.map((m) => [m.key, m]))
    expect(byKey['solo-a']!.nodes.map((n) => [n.node, n.present])).toEqual([
      ['node1', true],
      ['node3', false],
    ])
    // A solo model is on disk when node1 has it; node3 is where it may also be.
    expect(byKey['solo-a']!.on_disk).toBe(true)
    expect(byKey['cluster-c']!.nodes.map((n) => n.node)).toEqual(['node1', 'node2', 'node3'])
    const three = byKey['three-a']!.nodes.find((n) => n.node === 'node3')!
    expect(three).toMatchObject({ present: true, error: null, path: hub(node3(), 'org/three-a') })
    const du = Number(/^(\d+)/.exec(node3().runLocal(`du -sb -- '${hub(node3(), 'org/three-a')}'`).stdout)![1])
    expect(three.bytes).toBe(du)
    const n3 = node3().commands.length
    expect(await disk.bytesOn('three-a', 'node3')).toBe(du)
    expect(await disk.bytesOn('three-a', 'node1')).toBeNull()
    expect(node3().commands.length).toBe(n3)
  })

  it('a download to node3 lands in node3’s hub cache, and disk status finds it there', async () => {
    expect(fs.existsSync(path.join(node3().home, 'spark-vllm-docker'))).toBe(false)
    const { job_id } = downloads.start({ repo: 'org/three-dl', target: 'node3' })
    const job = await deps.jobs.wait(job_id)
    expect(job.error).toBeNull()
    expect(job).toMatchObject({ state: 'succeeded', title: 'Download org/three-dl to node3' })
    expect(job.result).toEqual({ repo: 'org/three-dl', target: 'node3', nodes: ['node3'] })
    const run = node3()
      .commands.filter((c) => c.includes('hf-download.sh'))
      .pop()!
    expect(run).toContain("setsid bash ./hf-download.sh 'org/three-dl' </dev/null")
    expect(fs.existsSync(path.join(hub(node3(), 'org/three-dl'), 'snapshots'))).toBe(true)
    expect(fs.existsSync(hub(sim.node1, 'org/three-dl'))).toBe(false)
    clock.advance(120_000)
    const entry3 = (await disk.status()).models.find((m) => m.key === 'three-dl')!.nodes.find((n) => n.node === 'node3')
    expect(entry3).toMatchObject({ present: true, error: null })
    expect(entry3!.bytes).toBeGreaterThan(0)
  })

  it('a download to all nodes runs on node1 and copies to node2 and node3 with each one’s settings', async () => {
    const { job_id } = downloads.start({ repo: 'org/every-n', target: 'all' })
    const job = await deps.jobs.wait(job_id)
    expect(job.error).toBeNull()
    expect(job.result).toEqual({ repo: 'org/every-n', target: 'all', nodes: ['node1', 'node2', 'node3'] })
    expect(job.title).toBe('Download org/every-n to node1, node2 and node3')
    const copies = sim.node1.commands.filter((c) => c.includes('rsync') && c.includes('models--org--every-n'))
    const t3 = nodes.targets.node3!
    expect(copies.some((c) => c.includes(`-e 'ssh -p ${t3.port} `) && c.includes(`'${t3.user}@${t3.host}:`))).toBe(true)
    for (const n of sim.nodes) expect(fs.readdirSync(path.join(hub(n, 'org/every-n'), 'snapshots'))).toHaveLength(1)
    expect(job.progress).toMatchObject({ percent: 100 })
  })

  it('a target that is not a configured node is 400 naming the configured ones, sending nothing', () => {
    const before = commandCounts()
    for (const target of ['node9', 'node4'])
      expect(() => downloads.start({ repo: 'org/nowhere', target })).toThrow(
        expect.objectContaining({
          status: 400,
          message: expect.stringMatching(new RegExp(`${target} is not configured.*node1, node2, node3`)),
        }),
      )
    expect(commandCounts()).toEqual(before)
  })

  it('deleting the weights of a placed model is 409 naming the placement; others go from node3 too', async () => {
    placed.set('placed-p', ['node3'])
    const before = commandCounts()
    await expect(disk.remove('placed-p')).rejects.toMatchObject({
      status: 409,
      message: expect.stringMatching(/placed-p is placed \(node3\)/),
    })
    expect(commandCounts()).toEqual(before)
    expect(fs.existsSync(hub(node3(), 'org/placed-p'))).toBe(true)
    placed.delete('placed-p')
    const res = await disk.remove('three-a')
    expect(res.deleted.map((d) => [d.node, d.bytes === null])).toEqual([
      ['node1', true],
      ['node3', false],
    ])
    expect(fs.existsSync(hub(node3(), 'org/three-a'))).toBe(false)
  })
})
