import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src-main/config/load'
import { ApiError } from '../../../src-main/contract/errors'
import type { FitEstimate, ModelDef, ValidationResult } from '../../../src-main/contract/models'
import { ManualClock } from '../../../src-main/lib/clock'
import { createLogger, Redactor } from '../../../src-main/lib/logger'
import { JobRegistry } from '../../../src-main/platform/jobs'
import { parseProbe } from '../../../src-main/models/launcherCapabilities'
import { PlacementManager, type PlacementValidator } from '../../../src-main/models/placements'
import type { CatalogEntry, CatalogReader } from '../../../src-main/models/types'
import type { SshPool } from '../../../src-main/ssh/pool'

const dirs: string[] = []
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })))

const entry: CatalogEntry = {
  def: { key: 'm', name: 'Model M', repo: 'org/m', engine_args: [], mode: 'solo' } as ModelDef,
  tags: ['custom'],
  bundled: false,
  effectiveKnobs: {},
  launchArgs: [],
}
/** The mid-2026 launcher as the probe reads it (test/fixtures/launcher). */
const MID_PROBE = new URL('../../fixtures/launcher/probe-mid-2026.txt', import.meta.url)
const catalog: CatalogReader = { list: () => [entry], get: () => entry, onChange: () => undefined }

/** A swap manager whose swaps stay in validation until `verdict` is called (nothing reaches a node). */
function manager(
  env: Record<string, string>,
  fit: FitEstimate = { mode: 'solo', verdict: 'fits', nodes: [], notes: [] },
) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-gate-'))
  dirs.push(dir)
  const config = loadConfig({ env: { DATA_DIR: dir, NODE1_HOST: '127.0.0.1', NODE1_USER: 'spark', ...env } })
  const clock = new ManualClock()
  const jobs = new JobRegistry(clock, new Redactor())
  let verdict!: (v: ValidationResult) => void
  const validator: PlacementValidator = {
    validate: () => new Promise<ValidationResult>((r) => (verdict = r)),
  }
  const swap = new PlacementManager({
    config,
    clock,
    logger: createLogger({ level: 'error', sink: { write: () => undefined } }),
    jobs,
    events: { publish: () => undefined },
    catalog,
    validator,
    pool: {} as SshPool,
    nodeNames: () => ['node1', 'node2'],
    targetOf: (node) => (node === 'node1' ? config.nodes.node1 : null),
    // Nothing listens there: the gate is all these tests reach.
    engineUrl: (head) => (head === 'node1' ? 'http://127.0.0.1:9' : null),
    estimate: async () => fit,
    headsCheck: async () => null,
    launcherOn: async () => parseProbe(fs.readFileSync(MID_PROBE, 'utf8'), '$HOME/spark-vllm-docker', 0),
    hardware: async () => null,
  })
  return { swap, jobs, verdict: (v: ValidationResult) => verdict(v) }
}

const refused: ValidationResult = {
  ok: false,
  stage: 'parser',
  error: 'vllm: error: unrecognized arguments: --nope',
  cmd_args: [],
  launch_cmd: '',
  parser: 'x',
}

describe('the gateway hold during a swap', () => {
  it('passes requests straight through when no swap runs', async () => {
    const { swap } = manager({})
    await expect(swap.admit(null, new AbortController().signal)).resolves.toMatchObject([
      { id: 'node1', baseUrl: 'http://127.0.0.1:9' },
    ])
  })

  it('past SWAP_HOLD_S a held request gets 503 with Retry-After, naming the swap', async () => {
    const { swap, jobs, verdict } = manager({ SWAP_HOLD_S: '0' })
    const { job_id } = await swap.begin('m')
    const err = await swap.admit('org/m', new AbortController().signal).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ApiError)
    expect(err).toMatchObject({ status: 503, code: 'swap_in_progress', headers: { 'Retry-After': '30' } })
    expect((err as Error).message).toMatch(/a model swap is in progress \(m, validating\)/)
    verdict(refused)
    await jobs.wait(job_id)
  })

  it('a swap refused by validation releases held requests to the model that stayed loaded', async () => {
    const { swap, jobs, verdict } = manager({})
    const { job_id } = await swap.begin('m')
    const held = swap.admit(null, new AbortController().signal)
    expect(swap.held).toBe(1)
    verdict(refused)
    await expect(held).resolves.toMatchObject([{ id: 'node1' }])
    const job = await jobs.wait(job_id)
    expect(job.error).toMatch(
      /validation failed \(parser\): vllm: error: unrecognized arguments: --nope; nothing was stopped/,
    )
  })

  it('a held request whose client leaves is released at once', async () => {
    const { swap, jobs, verdict } = manager({})
    const { job_id } = await swap.begin('m')
    const ac = new AbortController()
    const held = swap.admit(null, ac.signal).catch((e: unknown) => e)
    expect(swap.held).toBe(1)
    ac.abort(new Error('client went away'))
    expect(((await held) as Error).message).toBe('client went away')
    expect(swap.held).toBe(0)
    verdict(refused)
    await jobs.wait(job_id)
  })

  it('a model that does not fit needs confirm_no_fit: 409 with the numbers', async () => {
    const { swap } = manager(
      {},
      {
        mode: 'solo',
        verdict: 'no_fit',
        notes: [],
        nodes: [
          {
            node: 'node1',
            weights_bytes: 130e9,
            kv_cache_bytes: 10e9,
            need_bytes: 140e9,
            budget_bytes: 115.9e9,
            ram_total_bytes: 128e9,
            other_bytes: null,
            verdict: 'no_fit',
          },
        ],
      },
    )
    await expect(swap.begin('m')).rejects.toMatchObject({
      status: 409,
      message: expect.stringMatching(
        /does not fit in solo mode on node1 \(node1 needs 140\.0 GB of a 115\.9 GB budget\)/,
      ),
    })
    expect(swap.busy()).toBe(false)
  })
})
