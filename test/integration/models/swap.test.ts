import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { EventName } from '../../../src-main/contract/events'
import type { ModelsModule } from '../../../src-main/models/module'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { startFullSim, type FullSim } from '../../sim/full'

/** Validation and the model swap, end to end: the real daemon, real SSH, the sim's launcher, docker and llm. */
describe('launch validation and model swap on the sim', () => {
  let sim: FullSim
  let daemon: TestDaemon
  let dataDir: string
  let models: ModelsModule
  const published: { name: EventName; data: Record<string, unknown> }[] = []

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as Record<string, any> })
  const waitFor = async (cond: () => boolean | Promise<boolean>, what: string): Promise<void> => {
    for (let i = 0; i < 2000; i++) {
      if (await cond()) return
      await new Promise((r) => setTimeout(r, 10))
    }
    throw new Error(`never happened: ${what}`)
  }
  const chat = (signal?: AbortSignal, model?: string) =>
    fetch(`${daemon.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...(model ? { model } : {}), messages: [{ role: 'user', content: 'hello there' }] }),
      signal,
    })
  const chatsSeen = () => sim.llm.requests.filter((r) => r.path === '/v1/chat/completions').length
  const swap = async (key: string) => {
    const r = await json(
      await daemon.admin(`/api/swap/${key}`, { method: 'POST', body: JSON.stringify({ mode: 'solo' }) }),
    )
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    return r.body.job_id as string
  }

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-swap-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({ authorizedKeys: [key.publicKey], llmModel: 'sim/first' })
    daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0' }, dataDir })
    models = daemon.core.modules.find((m) => m.name === 'models') as unknown as ModelsModule
    const events = daemon.core.events
    const publish = events.publish.bind(events)
    events.publish = ((name: EventName, data: Record<string, unknown>) => {
      published.push({ name, data })
      publish(name as never, data as never)
    }) as typeof events.publish
    const add = async (def: Record<string, unknown>) =>
      expect((await daemon.admin('/api/models', { method: 'POST', body: JSON.stringify(def) })).status).toBe(200)
    await add({ key: 'first', name: 'First', repo: 'sim/first' })
    await add({ key: 'second', name: 'Second', repo: 'sim/second', engine_args: ['--max_model_len', '4096'] })
    await add({ key: 'rejected', name: 'Rejected', repo: 'sim/rejected', engine_args: ['--frobnicate', '3'] })
    await add({ key: 'broken', name: 'Broken', repo: 'sim/broken' })
    await add({ key: 'local', name: 'Local', local_path: '/data/models/sim-local' })
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('knows the loaded model at start from the llm, matched to the catalog', async () => {
    const { status, body } = await json(await daemon.admin('/api/swap'))
    expect(status).toBe(200)
    expect(body.loaded).toMatchObject({ key: 'first', served: 'sim/first' })
    expect(body.swapping).toBeNull()
  })

  it("validation runs vLLM's parser in a throwaway container of the image and accepts the exact serve arguments", async () => {
    const { status, body } = await json(await daemon.admin('/api/swap/second/validate', { method: 'POST' }))
    expect(status).toBe(200)
    expect(body).toMatchObject({ ok: true, stage: 'done', error: null })
    expect(body.parser).toMatch(/vllm\.entrypoints\.cli\.serve\.ServeSubcommand.*vllm\.utils\.argparse_utils/)
    expect(body.cmd_args).toEqual([
      'vllm',
      'serve',
      'sim/second',
      '--host',
      '0.0.0.0',
      '--port',
      String(sim.llm.port),
      '--max_model_len',
      '4096',
      // The gateway's own (gatewayEngineArgs): the catalog key as a second name, usage on every stream.
      '--served-model-name',
      'sim/second',
      'second',
      '--enable-force-include-usage',
    ])
    expect(body.launch_cmd).toMatch(
      /launch-cluster\.sh '--solo' '-t' 'vllm-node' '--name' 'vllm_node' '-d' 'exec' 'vllm' 'serve'/,
    )
    expect(sim.cluster.node1.commands.some((c) => /docker run -i --rm --network none .*'vllm-node' -c /.test(c))).toBe(
      true,
    )
    expect(sim.cluster.node1.commands.some((c) => c.startsWith("docker exec 'vllm_node' python3"))).toBe(false)
    // It does not disturb the loaded model.
    const served = (await json(await fetch(`${sim.llm.url}/v1/models`))).body.data as { id: string }[]
    expect(served.map((m) => m.id)).toEqual(['sim/first'])
  })

  it("an engine flag the parser rejects: ok=false with the parser's own message", async () => {
    const { body } = await json(await daemon.admin('/api/swap/rejected/validate', { method: 'POST' }))
    expect(body).toMatchObject({ ok: false, stage: 'parser' })
    expect(body.error).toMatch(/unrecognized arguments: --frobnicate 3/)
  })

  it('swaps to ready through every phase, holds chat meanwhile and forwards it after; a second swap is 409', async () => {
    sim.llm.holdLoads(true)
    const from = published.length
    const jobId = await swap('second')
    const again = await json(await daemon.admin('/api/swap/first', { method: 'POST', body: '{}' }))
    expect(again.status).toBe(409)
    expect(again.body.detail).toContain(jobId)
    await waitFor(() => sim.llm.loading === 'sim/second', 'the engine loads sim/second')
    const held = chat(undefined, 'sim/second')
    await waitFor(() => models.swap.held === 1, 'the chat request is held')
    const during = await json(await daemon.admin('/api/swap'))
    expect(during.body.swapping).toMatchObject({ key: 'second', mode: 'solo', phase: 'loading' })
    sim.llm.releaseLoads()
    const answered = await held
    expect(answered.status).toBe(200)
    expect(((await answered.json()) as { model: string }).model).toBe('sim/second')
    expect((await daemon.core.jobs.wait(jobId)).state).toBe('succeeded')
    // The steps come with the placements view, read after the hardware: the last one may follow the job's end.
    const phases = () =>
      published
        .slice(from)
        .flatMap((e) => (e.name === 'placements.changed' && e.data.step ? [e.data.step as { phase: string }] : []))
        .map((s) => s.phase)
    await waitFor(() => phases().includes('ready'), 'the ready step is published')
    expect(phases()).toEqual(['validating', 'stopping', 'launching', 'loading', 'ready'])
    const after = await json(await daemon.admin('/api/swap'))
    expect(after.body.loaded).toMatchObject({ key: 'second', served: 'sim/second', mode: 'solo' })
    expect(after.body.loaded.since).toEqual(expect.any(Number))
    expect(after.body.job).toMatchObject({ id: jobId, state: 'succeeded' })
    const list = (await json(await fetch(`${daemon.url}/v1/models`))).body.data as { id: string }[]
    expect(list.map((m) => m.id)).toContain('sim/second')
    const state = JSON.parse(fs.readFileSync(path.join(dataDir, 'swap-state.json'), 'utf8'))
    expect(state.loads.second).toEqual(expect.any(Number))
    sim.llm.holdLoads(false)
  })

  it('a swap is refused while a download runs, naming the download', async () => {
    let finish!: () => void
    const dl = daemon.core.jobs.start('download', 'Download org/big', () => new Promise<void>((r) => (finish = r)))
    const r = await json(await daemon.admin('/api/swap/first', { method: 'POST', body: '{}' }))
    expect(r.status).toBe(409)
    expect(r.body.detail).toContain(dl.id)
    finish()
    await daemon.core.jobs.wait(dl.id)
  })

  it('a model that fails to load: the previous model is relaunched and held requests are forwarded to it', async () => {
    sim.llm.failLoads('sim/broken')
    sim.llm.holdLoads(true)
    const jobId = await swap('broken')
    await waitFor(() => sim.llm.loading === 'sim/broken', 'the engine loads sim/broken')
    const held = chat()
    await waitFor(() => models.swap.held === 1, 'the chat request is held')
    sim.llm.releaseLoads()
    await waitFor(() => sim.llm.loading === 'sim/second', 'the rollback loads sim/second')
    sim.llm.releaseLoads()
    expect((await held).status).toBe(200)
    const job = await daemon.core.jobs.wait(jobId)
    expect(job.state).toBe('failed')
    expect(job.error).toMatch(/swap to Broken failed: the engine failed to load sim\/broken.*rolled back to Second/)
    expect(job.log.join('\n')).toMatch(/last log lines of Broken:[\s\S]*OutOfMemoryError/)
    expect((await json(await daemon.admin('/api/swap'))).body.loaded).toMatchObject({ key: 'second' })
    sim.llm.failLoads(null)
    sim.llm.holdLoads(false)
  })

  it('when the rollback fails too, held requests get 503 with Retry-After and an OpenAI-shaped error', async () => {
    sim.llm.failLoads('*')
    sim.llm.holdLoads(true)
    const jobId = await swap('broken')
    await waitFor(() => sim.llm.loading === 'sim/broken', 'the engine loads sim/broken')
    const held = chat()
    await waitFor(() => models.swap.held === 1, 'the chat request is held')
    sim.llm.releaseLoads()
    await waitFor(() => sim.llm.loading === 'sim/second', 'the rollback loads sim/second')
    sim.llm.releaseLoads()
    const res = await held
    expect(res.status).toBe(503)
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
    const body = (await res.json()) as { error: { message: string; code: string } }
    expect(body.error.message).toMatch(/swap to broken failed/)
    expect((await daemon.core.jobs.wait(jobId)).error).toMatch(/rollback to Second failed too/)
    expect((await json(await daemon.admin('/api/swap'))).body.loaded).toBeNull()
    sim.llm.failLoads(null)
    sim.llm.holdLoads(false)
  })

  it('a held request whose client disconnects is released and nothing is forwarded', async () => {
    sim.llm.holdLoads(true)
    const jobId = await swap('second')
    await waitFor(() => sim.llm.loading === 'sim/second', 'the engine loads sim/second')
    // The second swap of a model shows an ETA from the first one.
    expect((await json(await daemon.admin('/api/swap'))).body.swapping.eta_s).toEqual(expect.any(Number))
    const seen = chatsSeen()
    const ac = new AbortController()
    const gone = chat(ac.signal).catch((e: Error) => e)
    await waitFor(() => models.swap.held === 1, 'the chat request is held')
    ac.abort()
    expect(await gone).toBeInstanceOf(Error)
    await waitFor(() => models.swap.held === 0, 'the held request is released')
    sim.llm.releaseLoads()
    expect((await daemon.core.jobs.wait(jobId)).state).toBe('succeeded')
    sim.llm.holdLoads(false)
    // A request after the swap reaches the llm: the log would have shown the abandoned one too.
    expect((await chat()).status).toBe(200)
    expect(chatsSeen()).toBe(seen + 1)
  })
  it('a local model is bind-mounted at the same path through the launcher and served from that directory', async () => {
    const jobId = await swap('local')
    expect((await daemon.core.jobs.wait(jobId)).state).toBe('succeeded')
    const launch = sim.cluster.node1.commands.find((c) => c.includes('VLLM_SPARK_EXTRA_DOCKER_ARGS='))
    expect(launch).toContain(`VLLM_SPARK_EXTRA_DOCKER_ARGS='-v /data/models/sim-local:/data/models/sim-local'`)
    const container = JSON.parse(
      fs.readFileSync(path.join(sim.cluster.node1.state, 'docker', 'containers', 'vllm_node.json'), 'utf8'),
    ) as { HostConfig: { Binds: string[] } }
    expect(container.HostConfig.Binds).toContain('/data/models/sim-local:/data/models/sim-local')
    expect((await json(await daemon.admin('/api/swap'))).body.loaded).toMatchObject({
      key: 'local',
      served: '/data/models/sim-local',
    })
  })
  it('validation needs no llm container running: the throwaway container answers', async () => {
    expect(sim.cluster.node1.runLocal('docker stop vllm_node').code).toBe(0)
    const { status, body } = await json(await daemon.admin('/api/swap/second/validate', { method: 'POST' }))
    expect(status).toBe(200)
    expect(body).toMatchObject({ ok: true, stage: 'done' })
    expect(body.cmd_args.slice(0, 3)).toEqual(['vllm', 'serve', 'sim/second'])
  })
})
