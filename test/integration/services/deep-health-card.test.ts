import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ServiceStatus, StatusView } from '../../../src-main/contract/nodes'
import type { DeepHealthResult, ServiceRecord } from '../../../src-main/contract/services'
import { ManualClock } from '../../../src-main/lib/clock'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { startFullSim, type FullSim } from '../../sim/full'

/**
 * Issue 31, finding 4: the card and the deep-health row show the same latest result. A wedged asr
 * (`wedge asr` in the demo: /health answers OK, every transcription fails) reads Unhealthy on its card
 * once a probe finds it so; after a restart the card turns Healthy and deep health probes again at
 * once, instead of 65 s later, so both read ok together.
 */
describe('the service card carries the latest deep-health result', () => {
  let sim: FullSim
  let daemon: TestDaemon
  let dataDir: string
  const clock = new ManualClock(Date.now())

  const card = async (): Promise<ServiceRecord> => {
    const body = (await (await daemon.admin('/api/services')).json()) as { services: ServiceRecord[] }
    return body.services.find((s) => s.name === 'asr')!
  }
  const status = async (): Promise<ServiceStatus> =>
    ((await (await daemon.admin('/api/status')).json()) as StatusView).asr
  const row = async (): Promise<DeepHealthResult | null> => {
    const view = (await (await daemon.admin('/api/deep-health')).json()) as {
      services: { service: string; last: DeepHealthResult | null }[]
    }
    return view.services.find((s) => s.service === 'asr')!.last
  }
  /** Polls (in real time, bounded to a few seconds: far below the 65 s follow-up probe) until `ok`. */
  const until = async <T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string): Promise<T> => {
    for (let i = 0; i < 300; i++) {
      const v = await read()
      if (ok(v)) return v
      await new Promise((res) => setTimeout(res, 10))
    }
    throw new Error(`never saw ${what}: ${JSON.stringify(await read())}`)
  }

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-deep-card-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({ authorizedKeys: [key.publicKey] })
    daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0' }, dataDir, clock })
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('reads Unhealthy (deep health: wedged) on the card and in the status once a probe finds the service wedged', async () => {
    expect(await card()).toMatchObject({ label: 'Healthy', http_ok: true, deep_health: null })
    sim.asr.wedge()
    clock.advance(1000)
    const run = (await (await daemon.admin('/api/deep-health/asr/run', { method: 'POST' })).json()) as DeepHealthResult
    expect(run).toMatchObject({ ok: false, wedged: true, restart: { held_by: 'grace' } })

    const c = await card()
    expect(c).toMatchObject({ label: 'Unhealthy', http_ok: true })
    expect(c.label_reason).toMatch(/^deep health: wedged/)
    expect(c.deep_health).toEqual({ ok: false, wedged: true, at: run.at, stale: false })
    // The cluster view's table and the push events read the same status.
    const s = await status()
    expect(s).toMatchObject({ label: 'Unhealthy', label_reason: c.label_reason, deep_health: c.deep_health })
  })

  it('after a restart the card turns Healthy and deep health probes again at once, so both read ok', async () => {
    sim.asr.wedge()
    // Past the start-up grace of the daemon and of the container (whose start the sim dates in real time).
    clock.set(Math.max(clock.now(), Date.now()) + 61_000)
    const run = (await (await daemon.admin('/api/deep-health/asr/run', { method: 'POST' })).json()) as DeepHealthResult
    expect(run).toMatchObject({ ok: false, wedged: true, restart: { done: true } })
    expect(sim.asr.wedged).toBe(false)

    await until(card, (c) => c.label === 'Healthy', 'the card Healthy after the restart')
    const last = await until(row, (r) => r?.ok === true, 'the row ok without waiting for the follow-up probe')
    expect(last!.at).toBeGreaterThanOrEqual(run.at)
    const c = await card()
    expect(c).toMatchObject({ label: 'Healthy', label_reason: null })
    expect(c.deep_health).toMatchObject({ ok: true, at: last!.at })
  })

  it('keeps a failing probe from before the service came back from deciding the card, and marks it stale', async () => {
    sim.asr.wedge()
    clock.advance(1000)
    await daemon.admin('/api/deep-health/asr/run', { method: 'POST' })
    expect((await card()).label).toBe('Unhealthy')
    // An operator's restart: a new process, which deep health has not probed yet.
    clock.advance(1000)
    expect(await (await daemon.admin('/api/services/asr/restart', { method: 'POST' })).json()).toMatchObject({
      ok: true,
    })
    const c = await until(card, (x) => x.label === 'Healthy', 'the card Healthy after the operator restart')
    expect(c.deep_health === null || c.deep_health.ok || c.deep_health.stale).toBe(true)
    await until(row, (r) => r?.ok === true, 'the row ok after the operator restart')
  })
})
