import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StatusView } from '../../../src-main/contract/nodes'
import type { ServiceRecord } from '../../../src-main/contract/services'
import { ManualClock } from '../../../src-main/lib/clock'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { startFullSim, type FullSim } from '../../sim/full'

/**
 * A node that goes down (issue 31, finding 3): the services on it are Unknown (node unreachable)
 * with their actions refused, in the services list and the status alike, even while their HTTP
 * fakes (which the sim keeps on loopback) still answer. The llm on node1 is untouched.
 */
describe('services on a node that is down', () => {
  let sim: FullSim
  let daemon: TestDaemon
  let dataDir: string
  const clock = new ManualClock(Date.now())

  const list = async (): Promise<Record<string, ServiceRecord>> => {
    const res = await daemon.admin('/api/services')
    expect(res.status).toBe(200)
    const body = (await res.json()) as { services: ServiceRecord[] }
    return Object.fromEntries(body.services.map((s) => [s.name, s]))
  }

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-node-down-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({ authorizedKeys: [key.publicKey] })
    daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0' }, dataDir, clock })
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('reads Healthy with actions allowed while node2 answers', async () => {
    const s = await list()
    expect(s.asr).toMatchObject({ label: 'Healthy', label_reason: null, actions_blocked: null })
  })

  it('labels asr and tts Unknown (node unreachable) with a reason and refuses their actions', async () => {
    await sim.cluster.node2.down()
    // Past the services list's short cache of container states.
    clock.advance(3000)
    const s = await list()
    for (const name of ['asr', 'tts']) {
      expect(s[name], name).toMatchObject({ label: 'Unknown', label_reason: 'node unreachable', node: 'node2' })
      expect(s[name]!.actions_blocked).toMatch(/node2 .*unreachable/)
    }
    expect(s.llm).toMatchObject({ label: 'Healthy', actions_blocked: null })
    expect(s.asr!.recent_changes.at(-1)).toMatchObject({ from: 'Healthy', to: 'Unknown' })

    const status = (await (await daemon.admin('/api/status')).json()) as StatusView
    expect(status.tts).toMatchObject({ label: 'Unknown', label_reason: 'node unreachable' })

    const start = await daemon.admin('/api/services/asr/start', { method: 'POST' })
    expect(start.status).toBe(409)
    expect(JSON.stringify(await start.json())).toMatch(/node2 .*unreachable/)
  })

  it('is Healthy again once node2 is back', async () => {
    await sim.cluster.node2.up()
    // Past the SSH pool's memory of the failed attempt.
    clock.advance(30_000)
    const s = await list()
    expect(s.asr).toMatchObject({ label: 'Healthy', label_reason: null, actions_blocked: null })
  })
})
