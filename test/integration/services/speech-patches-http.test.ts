import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { OVERLAY_FILES } from '../../../src-main/services/speechPatches'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { startCount, upgradeContainer } from '../../sim/asrOverlays'
import { startFullSim, type FullSim } from '../../sim/full'

/** The speech patches through the real daemon, against the simulated cluster's asr container. */
describe('speech model patches over HTTP', () => {
  let sim: FullSim
  let daemon: TestDaemon
  let dataDir: string
  const clock = new ManualClock(Date.now())

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-speech-http-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({ authorizedKeys: [key.publicKey] })
    daemon = await startDaemon({
      env: { ...sim.env(), MONITOR_INTERVAL_S: '0', DEEP_HEALTH_INTERVAL_S: '86400' },
      clock,
      dataDir,
    })
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const call = async (pathname: string, init: RequestInit = {}): Promise<{ status: number; body: any }> => {
    const res = await daemon.admin(pathname, init)
    return { status: res.status, body: await res.json() }
  }
  const statuses = async (): Promise<Record<string, string>> => {
    const { status, body } = await call('/api/speech-models')
    expect(status).toBe(200)
    return Object.fromEntries((body.files as { name: string; status: string }[]).map((f) => [f.name, f.status]))
  }
  const node2 = (): FullSim['cluster']['node2'] => sim.cluster.node2

  it('GET /api/speech-models: missing in a fresh container, with the model ready', async () => {
    const { status, body } = await call('/api/speech-models')
    expect(status).toBe(200)
    expect(body).toMatchObject({ container: 'asr', error: null, model: { ready: true, name: sim.asr.model } })
    expect(await statuses()).toEqual(Object.fromEntries(OVERLAY_FILES.map((f) => [f, 'missing'])))
  })

  it('POST /api/speech-models/reapply brings them in sync and restarts asr once', async () => {
    const before = startCount(node2())
    const { status, body } = await call('/api/speech-models/reapply', { method: 'POST', body: '{}' })
    expect(status).toBe(200)
    expect(body.steps.filter((s: { ok: boolean }) => !s.ok)).toEqual([])
    expect(body.ok).toBe(true)
    expect(startCount(node2())).toBe(before + 1)
    expect(await statuses()).toEqual(Object.fromEntries(OVERLAY_FILES.map((f) => [f, 'in_sync'])))
  })

  it('after an asr upgrade the status shows drift until reapplied', async () => {
    upgradeContainer(node2(), 'asr')
    const drift = await statuses()
    expect(drift['diarizer.py']).toBe('drift')
    expect(drift['asr_app.py']).toBe('drift')
    expect((await call('/api/speech-models/reapply', { method: 'POST', body: '{}' })).body.ok).toBe(true)
    expect(Object.values(await statuses())).toEqual(OVERLAY_FILES.map(() => 'in_sync'))
  })

  it('POST /api/speech-models/restart restarts the asr container', async () => {
    const before = startCount(node2())
    const { status, body } = await call('/api/speech-models/restart', { method: 'POST', body: '{}' })
    expect(status).toBe(200)
    expect(body.ok).toBe(true)
    expect(startCount(node2())).toBe(before + 1)
  })
})
