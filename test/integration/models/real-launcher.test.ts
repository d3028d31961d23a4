import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launcherDoctorChecks } from '../../../src-main/cli/launcherDoctor'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { SshPool } from '../../../src-main/ssh/pool'
import { HostKeyStore } from '../../../src-main/ssh/hostKeys'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { startFullSim, type FullSim } from '../../sim/full'

/**
 * The model operations against what the real launcher generations and vLLM's checks do (issue 29):
 * layouts with tensor parallelism, commands built for the installed generation, validation in a
 * throwaway container with the launch's mounts, images that are not built.
 */
describe('the real launcher, its generations and vLLM checks, on the sim', () => {
  let sim: FullSim
  let daemon: TestDaemon
  let dataDir: string
  let roots: string
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as Record<string, any> })
  const post = (p: string, body: unknown = {}) => daemon.admin(p, { method: 'POST', body: JSON.stringify(body) })
  const serving = (): string[] => {
    const file = path.join(sim.cluster.node1.state, 'llm-serving')
    return fs.existsSync(file)
      ? fs
          .readFileSync(file, 'utf8')
          .split('\n')
          .filter((l) => l !== '')
      : []
  }
  const served = async (): Promise<string[]> => {
    const res = await fetch(`${sim.llm.url}/v1/models`).catch(() => null)
    if (res === null || !res.ok) return []
    return ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id)
  }
  const swapTo = async (key: string, mode: 'solo' | 'cluster') => {
    const r = await json(await post(`/api/swap/${key}`, { mode }))
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    return daemon.core.jobs.wait(r.body.job_id as string)
  }
  const launcher = async (refresh = false) =>
    (await json(await daemon.admin(`/api/launcher${refresh ? '?refresh=true' : ''}`))).body

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-real-launcher-'))
    roots = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-local-models-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({ authorizedKeys: [key.publicKey], llmModel: 'sim/first', clusterOnlyModels: ['sim/big'] })
    daemon = await startDaemon({
      env: { ...sim.env(), MONITOR_INTERVAL_S: '0', LOCAL_MODEL_ROOTS: roots },
      dataDir,
    })
    const add = async (def: Record<string, unknown>) => {
      const r = await json(await post('/api/models', def))
      expect(r.status, JSON.stringify(r.body)).toBe(200)
    }
    // A local model with its chat template inside its directory, and one whose template is missing.
    for (const name of ['with-template', 'without-template']) {
      fs.mkdirSync(path.join(roots, name), { recursive: true })
      fs.writeFileSync(path.join(roots, name, 'config.json'), '{"model_type":"sim"}')
    }
    fs.writeFileSync(path.join(roots, 'with-template', 'chat.jinja'), '{{ messages }}')
    await add({ key: 'first', name: 'First', repo: 'sim/first' })
    // node2 also runs asr and tts (12 GiB) beside the OS: 0.9 of its memory would not be free when vLLM
    // starts, so the cluster models ask for 0.85, as an operator would.
    const share = ['--gpu-memory-utilization', '0.85']
    await add({
      key: 'big',
      name: 'Big',
      repo: 'sim/big',
      mode: 'both',
      engine_args: ['--max-model-len', '8192', ...share],
    })
    await add({ key: 'tpl', name: 'Tpl', local_path: path.join(roots, 'with-template'), chat_template: 'chat.jinja' })
    await add({
      key: 'notpl',
      name: 'NoTpl',
      local_path: path.join(roots, 'without-template'),
      chat_template: 'chat.jinja',
    })
    await add({ key: 'tf5', name: 'Tf5', repo: 'sim/tf5', container: 'vllm-node-tf5', build_args: ['--tf5'] })
    await add({
      key: 'json',
      name: 'Json',
      repo: 'sim/json',
      mode: 'cluster',
      engine_args: ['--hf-overrides', '{"rope_scaling": {"factor": 2}}', ...share],
    })
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
    fs.rmSync(roots, { recursive: true, force: true })
  })

  it('reads the mid-2026 launcher on node1: its generation, commit and capabilities', async () => {
    const info = await launcher()
    expect(info).toMatchObject({ found: true, generation: 'mid-2026', commit: sim.cluster.launcherCommits.mid })
    expect(info.capabilities).toEqual(expect.arrayContaining(['solo', 'daemon_exec', 'quoted_exec', 'recipes']))
  })

  it('a cluster swap spans both nodes: --tensor-parallel-size 2 and the Ray backend reach vllm serve', async () => {
    const job = await swapTo('big', 'cluster')
    expect(job.state, job.error ?? '').toBe('succeeded')
    expect(serving()).toEqual(expect.arrayContaining(['--tensor-parallel-size', '2', '--distributed-executor-backend']))
    expect(serving()).not.toContain('--solo')
    const view = (await json(await daemon.admin('/api/swap'))).body
    expect(view.loaded).toMatchObject({
      key: 'big',
      mode: 'cluster',
      layout: { mode: 'cluster', nodes: ['node1', 'node2'], tensor_parallel: 2, backend: 'ray' },
    })
    expect(job.title).toMatch(/cluster on node1\+node2, tensor parallel 2/)
  })

  it('the fit estimate uses the same layout', async () => {
    const cluster = (await json(await daemon.admin('/api/models/big/fit?mode=cluster'))).body
    expect(cluster.nodes.map((n: { node: string }) => n.node)).toEqual(['node1', 'node2'])
    const solo = (await json(await daemon.admin('/api/models/big/fit?mode=solo'))).body
    expect(solo.nodes.map((n: { node: string }) => n.node)).toEqual(['node1'])
  })

  it('validates a local model that is not loaded with its template mounted: exists → ok, missing → vLLM says so', async () => {
    const before = await served()
    const ok = (await json(await post('/api/swap/tpl/validate', { mode: 'solo' }))).body
    expect(ok, JSON.stringify(ok)).toMatchObject({ ok: true, stage: 'done' })
    const missing = (await json(await post('/api/swap/notpl/validate', { mode: 'solo' }))).body
    expect(missing).toMatchObject({ ok: false, stage: 'parser' })
    expect(missing.error).toMatch(/appears path-like, but doesn't exist!/)
    // A throwaway container of the image, with the mount; the loaded model was not touched.
    const mount = `${path.join(roots, 'with-template')}:${path.join(roots, 'with-template')}:ro`
    const runs = sim.cluster.node1.commands.filter((c) => c.includes('docker run -i --rm --network none'))
    expect(runs.some((c) => c.includes(mount))).toBe(true)
    expect(sim.cluster.node1.commands.some((c) => c.startsWith("docker exec 'vllm_node' python3"))).toBe(false)
    expect(await served()).toEqual(before)
  })

  it('an image that is not built: validation names it and the build command, doctor fails it', async () => {
    const v = (await json(await post('/api/swap/tf5/validate', { mode: 'solo' }))).body
    expect(v).toMatchObject({ ok: false, stage: 'image' })
    expect(v.error).toMatch(/vllm-node-tf5 is not on node1.*\.\/build-and-copy\.sh -t vllm-node-tf5 --tf5/)
    const job = await swapTo('tf5', 'solo')
    expect(job.state).toBe('failed')
    expect(job.error).toMatch(/nothing was stopped/)
    const pool = new SshPool({
      privateKey: ensureServiceKey(path.join(dataDir, 'ssh')).privateKey,
      hostKeys: new HostKeyStore(
        path.join(dataDir, 'known_hosts.json'),
        () => Date.now(),
        () => undefined,
      ),
      clock: daemon.core.clock,
      logger: daemon.core.logger,
    })
    try {
      const checks = await launcherDoctorChecks({
        config: daemon.core.config,
        pool,
        clock: daemon.core.clock,
        logger: daemon.core.logger,
        images: ['vllm-node', 'vllm-node-tf5'],
      })
      expect(checks.find((c) => c.check === 'launcher generation')).toMatchObject({ status: 'ok' })
      const images = checks.find((c) => c.check === 'llm images')
      expect(images).toMatchObject({ status: 'fail' })
      expect(images?.detail).toMatch(/not on node1: vllm-node-tf5/)
    } finally {
      await pool.close()
    }
  })

  it('an early-2026 launcher: a solo swap is refused before anything is stopped, naming --solo and the fix', async () => {
    sim.cluster.setLauncherGeneration('early')
    const info = await launcher(true)
    expect(info.generation).toBe('early-2026')
    expect(info.missing.map((m: { capability: string }) => m.capability)).toContain('solo')
    const before = await served()
    const commands = sim.cluster.node1.commands.length
    const r = await json(await post('/api/swap/first', { mode: 'solo' }))
    expect(r.status).toBe(409)
    expect(r.body.detail).toMatch(/no --solo.*Services → Updates/)
    expect(sim.cluster.node1.commands.slice(commands).some((c) => c.includes(' stop'))).toBe(false)
    expect(await served()).toEqual(before)
  })

  it('an early-2026 launcher runs a cluster model: -d start, then vllm serve dispatched by Tandem with JSON intact', async () => {
    const job = await swapTo('json', 'cluster')
    expect(job.state, job.error ?? '').toBe('succeeded')
    expect(serving()).toContain('{"rope_scaling": {"factor": 2}}')
    const launch = sim.cluster.node1.commands.find((c) => c.includes("'-d' 'start' && docker exec -d"))
    expect(launch).toBeDefined()
    // The cluster stays up after the launch returns: the model answers.
    // Its served name and the catalog key it was launched with (gatewayEngineArgs).
    expect(await served()).toEqual(['sim/json', 'json'])
  })

  it('after the update brings the mid-2026 launcher, Tandem reads it again without being asked', async () => {
    const r = await json(await post('/api/updates/apply'))
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    const job = await daemon.core.jobs.wait(r.body.job_id as string)
    expect(job.state, job.error ?? '').toBe('succeeded')
    expect((await launcher()).generation).toBe('mid-2026')
  })
})
