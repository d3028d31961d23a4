import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DeepHealthResult, ServiceRecord } from '../../../src-main/contract/services'
import { ManualClock } from '../../../src-main/lib/clock'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { startFullSim, type FullSim } from '../../sim/full'

interface Row {
  service: string
  running: boolean
  last: DeepHealthResult | null
  total_restarts: number
  last_restart_at: number | null
}

/**
 * Issue 31, finding 4: the service card and the deep-health row agree. A service that turns
 * Unhealthy is probed at once; after a restart the row follows the card back to ok; the results and
 * restart counters survive a daemon restart (Restart to apply), and a malformed file is moved aside.
 */
describe('deep health follows the service cards and survives a restart', () => {
  let sim: FullSim
  let daemon: TestDaemon
  let dataDir: string
  const clock = new ManualClock(Date.now())

  const list = async (): Promise<Record<string, ServiceRecord>> => {
    const body = (await (await daemon.admin('/api/services')).json()) as { services: ServiceRecord[] }
    return Object.fromEntries(body.services.map((s) => [s.name, s]))
  }
  const row = async (service: string): Promise<Row> => {
    const view = (await (await daemon.admin('/api/deep-health')).json()) as { services: Row[] }
    return view.services.find((s) => s.service === service)!
  }
  /** Waits (in real time, bounded) until the asr row satisfies `ok`. */
  const rowUntil = async (ok: (r: Row) => boolean, what: string): Promise<Row> => {
    for (let i = 0; i < 500; i++) {
      const r = await row('asr')
      if (ok(r)) return r
      await new Promise((res) => setTimeout(res, 10))
    }
    throw new Error(`the asr row never showed ${what}: ${JSON.stringify(await row('asr'))}`)
  }
  const boot = async (): Promise<TestDaemon> =>
    startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0' }, dataDir, clock })

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-deep-sync-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({ authorizedKeys: [key.publicKey] })
    daemon = await boot()
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('probes a service as soon as its card turns Unhealthy, without waiting for the interval', async () => {
    expect((await list()).asr!.label).toBe('Healthy')
    expect((await row('asr')).last).toBeNull()
    await sim.asr.setFault('error500')
    expect((await list()).asr!.label).toBe('Unhealthy')
    const r = await rowUntil((x) => x.last !== null, 'a probe')
    expect(r.last).toMatchObject({ ok: false, wedged: true, restart: { held_by: 'grace' } })
  })

  it('after "Run now" restarts the service, the row follows the Healthy card back to ok', async () => {
    clock.set(Math.max(clock.now(), Date.now()) + 61_000)
    const run = (await (await daemon.admin('/api/deep-health/asr/run', { method: 'POST' })).json()) as DeepHealthResult
    expect(run).toMatchObject({ ok: false, wedged: true, restart: { done: true } })
    expect((await list()).asr!.label).toBe('Healthy')
    const r = await rowUntil((x) => x.last?.ok === true, 'ok after the restart')
    expect(r.last!.at).toBeGreaterThanOrEqual(run.at)
    expect(r.total_restarts).toBe(1)
  })

  it('keeps the last results and the restart counters across a daemon restart', async () => {
    const before = await row('asr')
    await daemon.stop()
    daemon = await boot()
    const after = await row('asr')
    expect(after.last).toEqual(before.last)
    expect(after).toMatchObject({ total_restarts: 1, last_restart_at: before.last_restart_at })
  })

  it('moves a malformed deep-health file aside with a warning and starts fresh', async () => {
    await daemon.stop()
    const file = path.join(dataDir, 'deep-health.json')
    expect(fs.existsSync(file)).toBe(true)
    fs.writeFileSync(file, '{"services": [')
    daemon = await boot()
    expect((await row('asr')).last).toBeNull()
    expect(daemon.logs.lines.some((l) => /deep-health .*malformed.*moved aside/.test(l))).toBe(true)
    expect(fs.readdirSync(dataDir).some((f) => f.startsWith('deep-health.json.corrupt-'))).toBe(true)
  })
})
