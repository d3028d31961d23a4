import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ConnectivityView } from '../../../src-main/contract/nodes'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { startFullSim, type FullSim } from '../../sim/full'

/**
 * Issue 31, finding 3: the llm going down and coming back during a model swap is recorded on the
 * connectivity timeline as a planned swap naming both models, not as an outage; an llm that goes
 * down with no swap is still an outage.
 */
describe('the connectivity timeline during a model swap', () => {
  let sim: FullSim
  let daemon: TestDaemon
  let dataDir: string

  const waitFor = async (cond: () => boolean, what: string): Promise<void> => {
    for (let i = 0; i < 2000; i++) {
      if (cond()) return
      await new Promise((r) => setTimeout(r, 10))
    }
    throw new Error(`never happened: ${what}`)
  }
  const llmTransitions = async () => {
    const view = (await (await daemon.admin('/api/connectivity')).json()) as ConnectivityView
    return view.events.filter((e) => e.kind === 'transition' && e.subject === 'llm')
  }
  const checkStatus = async (): Promise<void> => {
    expect((await daemon.admin('/api/status')).status).toBe(200)
  }

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-swap-timeline-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({ authorizedKeys: [key.publicKey], llmModel: 'sim/first' })
    daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0' }, dataDir })
    const add = async (def: Record<string, unknown>) =>
      expect((await daemon.admin('/api/models', { method: 'POST', body: JSON.stringify(def) })).status).toBe(200)
    await add({ key: 'first', name: 'First', repo: 'sim/first' })
    await add({ key: 'second', name: 'Second', repo: 'sim/second' })
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('marks the down and up of the llm during a swap as a planned swap from one model to the other', async () => {
    await checkStatus()
    sim.llm.holdLoads(true)
    const res = await daemon.admin('/api/swap/second', { method: 'POST', body: JSON.stringify({ mode: 'solo' }) })
    expect(res.status).toBe(200)
    const { job_id } = (await res.json()) as { job_id: string }
    await waitFor(() => sim.llm.loading === 'sim/second', 'the engine loads sim/second')
    await checkStatus()
    sim.llm.releaseLoads()
    expect((await daemon.core.jobs.wait(job_id)).state).toBe('succeeded')
    await checkStatus()

    // The job's end is recorded from its own last step, which the bus delivers a moment after the job settles.
    let transitions = await llmTransitions()
    for (let i = 0; i < 200 && transitions.length < 2; i++) {
      await new Promise((r) => setTimeout(r, 25))
      transitions = await llmTransitions()
    }
    const [down, up] = transitions
    expect(down).toMatchObject({ state: 'down', planned: 'planned swap: first → second' })
    expect(up).toMatchObject({ state: 'up', planned: (down as { planned?: string }).planned })
  })

  it('records an llm that stops outside a swap as an outage (no planned mark)', async () => {
    sim.cluster.node1.runLocal('docker stop vllm_node')
    await waitFor(() => sim.llm.fault.kind === 'refused', 'the llm stops answering')
    await checkStatus()
    const last = (await llmTransitions()).at(-1)
    expect(last).toMatchObject({ state: 'down' })
    expect(last).not.toHaveProperty('planned')
  })
})
