import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import type { EventName } from '../../../src-main/contract/events'
import type { DeepHealthResult } from '../../../src-main/contract/services'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { startFullSim, type FullSim } from '../../sim/full'

/**
 * Deep health end to end: the real daemon probes the sim's asr, tts and llm over loopback, and
 * restarts the wedged asr container over real SSH through the services manager; the sim's docker
 * restart clears the wedge. The clock is the daemon's injected one, moved past the grace by hand.
 */
describe('deep health on the sim', () => {
  let sim: FullSim
  let daemon: TestDaemon
  let dataDir: string
  const clock = new ManualClock(Date.now())
  const published: DeepHealthResult[] = []

  const run = async (service: string): Promise<DeepHealthResult> => {
    const res = await daemon.admin(`/api/deep-health/${service}/run`, { method: 'POST' })
    const body = (await res.json()) as DeepHealthResult
    expect(res.status, JSON.stringify(body)).toBe(200)
    return body
  }
  const restarts = () => sim.cluster.node2.commands.filter((c) => /docker restart\b.*'?asr'?/.test(c)).length

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-deep-health-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({ authorizedKeys: [key.publicKey] })
    daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0' }, dataDir, clock })
    const events = daemon.core.events
    const publish = events.publish.bind(events)
    events.publish = ((name: EventName, data: never) => {
      if (name === 'deephealth.result') published.push(data as DeepHealthResult)
      publish(name as never, data)
    }) as typeof events.publish
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('finds asr, tts and llm healthy, each probe a real call', async () => {
    const before = sim.asr.requests.length
    for (const s of ['asr', 'tts', 'llm']) expect(await run(s)).toMatchObject({ service: s, ok: true, wedged: false })
    expect(sim.asr.requests.length).toBe(before + 1)
    const view = (await (await daemon.admin('/api/deep-health')).json()) as {
      services: { service: string; configured: boolean; last: DeepHealthResult | null }[]
    }
    expect(view.services.map((s) => [s.service, s.configured, s.last?.ok])).toEqual([
      ['asr', true, true],
      ['tts', true, true],
      ['llm', true, true],
    ])
    expect(published.filter((r) => r.ok).length).toBeGreaterThanOrEqual(3)
  })

  it('holds a wedged asr in the start-up grace, then restarts it over SSH, which clears the wedge', async () => {
    sim.asr.wedge()
    const held = await run('asr')
    expect(held).toMatchObject({ ok: false, wedged: true, restart: { requested: true, done: false, held_by: 'grace' } })
    expect(held.error).toMatch(/cudaErrorUnknown/)
    expect(restarts()).toBe(0)

    // Past the grace from the container's own start too: the sim started it in real time, some
    // (load-dependent) moment after this clock was made.
    clock.set(Math.max(clock.now(), Date.now()) + 61_000)
    const restarted = await run('asr')
    expect(restarted.restart, JSON.stringify(restarted.restart)).toMatchObject({ requested: true, done: true })
    expect(restarts()).toBe(1)
    expect(sim.asr.wedged).toBe(false)

    // The next probe finds it well: a recovery report from deep health in the connectivity log.
    expect(await run('asr')).toMatchObject({ ok: true })
    let report: { source: string | null; ok: boolean } | undefined
    while (report === undefined) {
      const conn = (await (await daemon.admin('/api/connectivity')).json()) as {
        events: { subject: string; kind: string; source: string | null; ok: boolean }[]
      }
      report = conn.events.find((e) => e.subject === 'asr' && e.kind === 'report' && e.source === 'deep-health')
      if (report === undefined) await new Promise((r) => setTimeout(r, 10))
    }
    expect(report.ok).toBe(true)
  })

  it('holds the next restart back by the cooldown', async () => {
    sim.asr.wedge()
    clock.advance(70_000)
    const r = await run('asr')
    expect(r.restart).toMatchObject({ requested: true, done: false, held_by: 'cooldown' })
    expect(restarts()).toBe(1)
    const view = (await (await daemon.admin('/api/deep-health')).json()) as {
      services: { service: string; restarts_last_30m: number; total_restarts: number }[]
    }
    expect(view.services.find((s) => s.service === 'asr')).toMatchObject({ restarts_last_30m: 1, total_restarts: 1 })
    sim.asr.containerStarted()
  })

  it('answers 404 for a service deep health does not probe', async () => {
    const res = await daemon.admin('/api/deep-health/whisper/run', { method: 'POST' })
    expect(res.status).toBe(404)
  })
})
