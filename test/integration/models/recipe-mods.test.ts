import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { startFullSim, type FullSim } from '../../sim/full'

/**
 * Validation judges what the engine will see: the sim's launcher checkout holds two published
 * recipes (upstream 358bf26) whose mods change what vLLM accepts — one writes the chat template the
 * command names, one adds a flag stock vLLM lacks — and Tandem's stand-ins of those mods.
 */
describe('validating recipes whose mods change what vLLM accepts (sim)', () => {
  let sim: FullSim
  let daemon: TestDaemon
  let dataDir: string
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as Record<string, any> })

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-recipe-mods-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({ authorizedKeys: [key.publicKey], llmModel: 'sim/first' })
    daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0' }, dataDir })
    for (const name of ['qwen3.6-35b-a3b-fp8', 'step-3.7-flash-fp8']) {
      const r = await json(await daemon.admin(`/api/models/recipes/${name}/import`, { method: 'POST' }))
      expect(r.status, JSON.stringify(r.body)).toBe(200)
    }
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  /** Runs `fn` with a mod's run.sh in the sim's checkout replaced by `script`, then puts it back. */
  const withMod = async <T>(mod: string, script: string, fn: () => Promise<T>): Promise<T> => {
    const file = path.join(sim.cluster.node1.home, 'spark-vllm-docker', 'mods', mod, 'run.sh')
    const original = fs.readFileSync(file, 'utf8')
    fs.writeFileSync(file, script)
    try {
      return await fn()
    } finally {
      fs.writeFileSync(file, original)
    }
  }
  const validate = async (key: string, mode: string) =>
    json(await daemon.admin(`/api/swap/${key}/validate`, { method: 'POST', body: JSON.stringify({ mode }) }))

  it('accepts a chat template that the recipe’s mod writes into the container', async () => {
    const { status, body } = await validate('qwen3.6-35b-a3b-fp8', 'solo')
    expect(status).toBe(200)
    expect(body, JSON.stringify(body)).toMatchObject({ ok: true, stage: 'done' })
    expect(body.cmd_args).toEqual(expect.arrayContaining(['--chat-template', 'fixed_chat_template.jinja']))
  })

  it('accepts a flag that only the recipe’s mod adds to vLLM', async () => {
    const { status, body } = await validate('step-3.7-flash-fp8', 'cluster')
    expect(status).toBe(200)
    expect(body, JSON.stringify(body)).toMatchObject({ ok: true, stage: 'done' })
    expect(body.cmd_args).toContain('--gpu-memory-utilization-gb')
  })

  it('still refuses, definitively, what the engine would refuse after the mods', async () => {
    const { body } = await withMod('fix-qwen3.6-chat-template', '#!/bin/bash\necho "this mod writes nothing"\n', () =>
      validate('qwen3.6-35b-a3b-fp8', 'solo'),
    )
    expect(body).toMatchObject({ ok: false, stage: 'parser' })
    expect(body.error).toMatch(/appears path-like, but doesn't exist/)
  })

  it('without the mod that adds it, the flag is refused as stock vLLM refuses it', async () => {
    const { body } = await withMod('gpu-mem-util-gb', '#!/bin/bash\necho "patched nothing"\n', () =>
      validate('step-3.7-flash-fp8', 'cluster'),
    )
    expect(body).toMatchObject({ ok: false, stage: 'parser' })
    expect(body.error).toMatch(/unrecognized arguments: .*--gpu-memory-utilization-gb/)
  })

  it('a mod that fails in the validation container leaves the verdict open, never a no', async () => {
    const { body } = await withMod('step-3.7-flash', '#!/bin/bash\necho "pip: no network" >&2; exit 1\n', () =>
      validate('step-3.7-flash-fp8', 'cluster'),
    )
    expect(body).toMatchObject({ ok: null, stage: 'mods' })
    expect(body.error).toMatch(/mods\/step-3.7-flash failed in the validation container/)
  })

  const swapTo = async (key: string, mode: string): Promise<string[]> => {
    const r = await json(await daemon.admin(`/api/swap/${key}`, { method: 'POST', body: JSON.stringify({ mode }) }))
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    const job = await daemon.core.jobs.wait(r.body.job_id as string)
    expect(job.state, JSON.stringify(job)).toBe('succeeded')
    return fs.readFileSync(path.join(sim.cluster.node1.state, 'llm-serving'), 'utf8').trim().split('\n')
  }
  const after = (argv: readonly string[], flag: string): string | undefined => argv[argv.indexOf(flag) + 1]

  it('places an either-mode recipe solo with tensor parallel 1, its mod applied by the launcher', async () => {
    const argv = await swapTo('qwen3.6-35b-a3b-fp8', 'solo')
    expect(argv.slice(0, 3)).toEqual(['vllm', 'serve', 'Qwen/Qwen3.6-35B-A3B-FP8'])
    expect(after(argv, '-tp')).toBe('1')
    expect(after(argv, '--chat-template')).toBe('fixed_chat_template.jinja')
    expect(argv).not.toContain('--distributed-executor-backend')
    // The recipe's env reached the engine through the launch script the launcher ran.
    const env = fs.readFileSync(path.join(sim.cluster.node1.state, 'llm-serving.env'), 'utf8')
    expect(env).toContain('VLLM_MARLIN_USE_ATOMIC_ADD=1\n')
    expect(sim.cluster.node1.commands.some((c) => c.includes('--launch-script "$tandem_script"'))).toBe(true)
  })

  it('places the same recipe on two nodes with the recipe’s tensor parallel 2', async () => {
    const argv = await swapTo('qwen3.6-35b-a3b-fp8', 'cluster')
    expect(after(argv, '-tp')).toBe('2')
    // The sim's launcher runs several nodes over Ray by default: the script keeps the recipe's backend.
    expect(after(argv, '--distributed-executor-backend')).toBe('ray')
    expect(after(argv, '--port')).toBe(String(sim.llm.port))
  })
})
