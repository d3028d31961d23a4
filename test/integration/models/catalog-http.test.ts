import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { startFullSim, type FullSim } from '../../sim/full'

/** The catalog, knobs, recipes and fit estimate through the real daemon, against the simulated cluster. */
describe('models catalog over HTTP', () => {
  let sim: FullSim
  let daemon: TestDaemon
  let dataDir: string
  let recipesDir: string
  const clock = new ManualClock(Date.now())

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-catalog-http-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({ authorizedKeys: [key.publicKey] })
    recipesDir = path.join(sim.cluster.node1.home, 'spark-vllm-docker', 'recipes')
    daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0' }, clock, dataDir })
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  // Response bodies are checked field by field with matchers; a loose type keeps that readable.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const call = async (pathname: string, init: RequestInit = {}): Promise<{ status: number; body: any }> => {
    const res = await daemon.admin(pathname, init)
    return { status: res.status, body: await res.json() }
  }
  const post = (pathname: string, body: unknown) => call(pathname, { method: 'POST', body: JSON.stringify(body) })
  const put = (pathname: string, body: unknown) => call(pathname, { method: 'PUT', body: JSON.stringify(body) })
  const overrides = (): string => path.join(dataDir, 'models-overrides.yaml')
  /** Every command either node ran over SSH. */
  const sshLog = (): string => [...sim.cluster.node1.commands, ...sim.cluster.node2.commands].join('\n')

  it('GET /api/models lists the bundled catalog with effective knobs and launch args', async () => {
    const { status, body } = await call('/api/models')
    expect(status).toBe(200)
    expect(body.length).toBeGreaterThanOrEqual(8)
    const qwen = body.find((m: { key: string }) => m.key === 'qwen3-32b-fp8')
    expect(qwen).toMatchObject({ tags: ['bundled'], loaded: false, effective_knobs: { 'max-model-len': 32768 } })
    expect(qwen.launch_args).toEqual(qwen.engine_args)
  })

  const bad: [string, Record<string, unknown>][] = [
    ['both sources', { key: 'b1', name: 'B', repo: 'acme/m', local_path: '/data/m' }],
    ['neither source', { key: 'b2', name: 'B' }],
    ['a relative path', { key: 'b3', name: 'B', local_path: 'data/MARK' }],
    ['a .. segment', { key: 'b4', name: 'B', local_path: '/data/../MARK' }],
    ['a path outside the roots', { key: 'b5', name: 'B', local_path: '/etc/MARK' }],
    [
      'a chat template outside the local path',
      { key: 'b6', name: 'B', local_path: '/data/m', chat_template: '/data/MARK/t.jinja' },
    ],
    ['metacharacters in repo', { key: 'b7', name: 'B', repo: 'acme/MARK;id' }],
    [
      'metacharacters in engine args',
      { key: 'b8', name: 'B', repo: 'acme/m', engine_args: ['--served-model-name', 'MARK$(id)'] },
    ],
  ]
  for (const [what, input] of bad) {
    it(`POST /api/models with ${what}: 400, nothing persisted, nothing sent over SSH`, async () => {
      const { status, body } = await post('/api/models', input)
      expect(status).toBe(400)
      expect(JSON.stringify(body)).toMatch(/local_path|repo|chat_template|engine arg|source/)
      expect(fs.existsSync(overrides())).toBe(false)
      expect(sshLog()).not.toContain('MARK')
      expect((await call('/api/models')).body.some((m: { key: string }) => m.key === input.key)).toBe(false)
    })
  }

  it('PUT knobs with metacharacters in a value is a 400 and nothing is written', async () => {
    const { status } = await put('/api/models/qwen3-32b-fp8/knobs', { knobs: { 'max-model-len': '4096;MARK' } })
    expect(status).toBe(400)
    expect(fs.existsSync(overrides())).toBe(false)
  })

  it('POST a custom entry, PUT its knobs, DELETE it; a bundled entry is a 409', async () => {
    const added = await post('/api/models', {
      key: 'my-local',
      name: 'My local model',
      local_path: '/data/models/mine',
      chat_template: 'chat.jinja',
      engine_args: ['--max-model-len', '8192'],
    })
    expect(added.status).toBe(200)
    expect(added.body).toMatchObject({
      key: 'my-local',
      tags: ['custom', 'local'],
      effective_knobs: { 'max-model-len': 8192 },
    })
    const knobs = await put('/api/models/my-local/knobs', { knobs: { 'max-model-len': 4096, 'fp8-kv-cache': true } })
    expect(knobs.status).toBe(200)
    expect(knobs.body.launch_args).toEqual(['--max-model-len', '4096', '--kv-cache-dtype', 'fp8'])
    expect(fs.readFileSync(overrides(), 'utf8')).toContain('my-local')
    expect((await call('/api/models/gpt-oss-120b', { method: 'DELETE' })).status).toBe(409)
    expect((await call('/api/models/my-local', { method: 'DELETE' })).body).toEqual({ deleted: true })
    expect((await call('/api/models/my-local', { method: 'DELETE' })).status).toBe(404)
  })

  it('GET /api/models/recipes reads the launcher checkout over SSH; a bad recipe is listed with its reason', async () => {
    fs.writeFileSync(
      path.join(recipesDir, 'evil.yaml'),
      'name: Evil\ndefaults:\n  port: 8000\ncommand: |\n  vllm serve acme/m --served-model-name x; curl http://127.0.0.1:9/MARK | sh\n',
    )
    const { status, body } = await call('/api/models/recipes')
    expect(status).toBe(200)
    expect(body.hint).toBeNull()
    const names = body.recipes.map((r: { name: string }) => r.name)
    expect(names).toEqual(
      expect.arrayContaining([
        'glm-4.7-flash-awq',
        'minimax-m2.5-awq',
        'gemma4-26b-a4b-nvfp4',
        'deepseek-v4-flash',
        'glm-5-int4',
        'evil',
      ]),
    )
    const evil = body.recipes.find((r: { name: string }) => r.name === 'evil')
    expect(evil).toMatchObject({ model: null, error: expect.stringMatching(/shell syntax/) })
    const mm = body.recipes.find((r: { name: string }) => r.name === 'minimax-m2.5-awq')
    expect(mm).toMatchObject({
      solo: false,
      cluster: true,
      model: { mode: 'cluster', repo: 'cyankiwi/MiniMax-M2.5-AWQ-4bit' },
    })

    const refused = await post('/api/models/recipes/evil/import', {})
    expect(refused.status).toBe(400)
    expect((await call('/api/models')).body.some((m: { key: string }) => m.key === 'evil')).toBe(false)
    expect(sshLog()).not.toContain('MARK')
    const imported = await post('/api/models/recipes/nemotron-3-nano-nvfp4/import', {})
    expect(imported.status).toBe(200)
    expect(imported.body).toMatchObject({
      key: 'nemotron-3-nano-nvfp4',
      tags: ['custom', 'recipe'],
      mode: 'solo',
      mods: ['mods/fix-nemotron-nano'],
    })
    expect(imported.body.description).toMatch(/--apply-mod: mods\/fix-nemotron-nano/)
    expect((await post('/api/models/recipes/nemotron-3-nano-nvfp4/import', {})).status).toBe(409)
    // A recipe named like a bundled entry cannot shadow it.
    expect((await post('/api/models/recipes/glm-4.7-flash-awq/import', {})).status).toBe(409)
    expect((await post('/api/models/recipes/nope/import', {})).status).toBe(404)
    fs.rmSync(path.join(recipesDir, 'evil.yaml'))
  })

  it('a recipe needing four nodes is listed as not runnable and its import is a 409; a two-node one imports whole', async () => {
    const { body } = await call('/api/models/recipes')
    const glm5 = body.recipes.find((r: { name: string }) => r.name === 'glm-5-int4')
    expect(glm5).toMatchObject({ nodes_needed: 4, runnable: false, error: null, model: { mode: 'cluster' } })
    expect(glm5.reason).toMatch(/needs 4 nodes.*2 configured here/)
    const refused = await post('/api/models/recipes/glm-5-int4/import', {})
    expect(refused.status).toBe(409)
    expect(JSON.stringify(refused.body)).toMatch(/needs 4 nodes/)
    expect((await call('/api/models')).body.some((m: { key: string }) => m.key === 'glm-5-int4')).toBe(false)

    const ds = await post('/api/models/recipes/deepseek-v4-flash/import', {})
    expect(ds.status).toBe(200)
    expect(ds.body).toMatchObject({ mode: 'cluster', container: 'vllm-node-dsv4', build_args: expect.any(Array) })
    const args: string[] = ds.body.engine_args
    expect(args[args.indexOf('--reasoning-config') + 1]).toBe(
      '{"reasoning_parser":"deepseek_v4","reasoning_start_str":"<think>","reasoning_end_str":"</think>"}',
    )
    expect(args[args.indexOf('--tensor-parallel-size') + 1]).toBe('2')
    expect(fs.readFileSync(overrides(), 'utf8')).toContain('vllm-node-dsv4')
    expect((await call('/api/models/deepseek-v4-flash', { method: 'DELETE' })).status).toBe(200)
  })

  it('no recipes folder in the checkout: an empty list with a hint', async () => {
    const aside = `${recipesDir}.aside`
    fs.renameSync(recipesDir, aside)
    try {
      const { status, body } = await call('/api/models/recipes')
      expect(status).toBe(200)
      expect(body.recipes).toEqual([])
      expect(body.hint).toMatch(/No launcher checkout/)
    } finally {
      fs.renameSync(aside, recipesDir)
    }
  })

  it('GET /api/models/{key}/fit reads config.json from the hub cache on node1 and live RAM', async () => {
    const snap = path.join(sim.cluster.node1.home, '.cache/huggingface/hub/models--Qwen--Qwen3-32B-FP8/snapshots/abc')
    fs.mkdirSync(snap, { recursive: true })
    fs.writeFileSync(
      path.join(snap, 'config.json'),
      JSON.stringify({
        num_hidden_layers: 64,
        num_attention_heads: 64,
        num_key_value_heads: 8,
        head_dim: 128,
        torch_dtype: 'bfloat16',
      }),
    )
    const { status, body } = await call('/api/models/qwen3-32b-fp8/fit?mode=solo')
    expect(status).toBe(200)
    expect(body.mode).toBe('solo')
    const n1 = body.nodes[0]
    // 2 × 64 layers × 8 KV heads × 128 × 1 byte (FP8) × 32768 tokens
    expect(n1.kv_cache_bytes).toBe(4_294_967_296)
    // The snapshot is on node1's disk now, so its size there is what counts.
    expect(n1.weights_bytes).toBeGreaterThan(0)
    expect(body.notes.join('\n')).toMatch(/size on disk/)
    expect(n1.ram_total_bytes).toBeGreaterThan(0)
    expect(n1.budget_bytes).toBe(Math.floor(n1.ram_total_bytes * 0.7))
    expect(['fits', 'tight', 'no_fit']).toContain(body.verdict)
  })
})
