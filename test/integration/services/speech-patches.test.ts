import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { ApiError } from '../../../src-main/contract/errors'
import { SpeechModelsView, StepResult } from '../../../src-main/contract/services'
import { ManualClock } from '../../../src-main/lib/clock'
import {
  HEALTH_WAIT_MS,
  OVERLAY_FILES,
  SpeechPatches,
  defaultOverlayDir,
  parseSha256sum,
} from '../../../src-main/services/speechPatches'
import type { ServiceControl } from '../../../src-main/services/types'
import { shq } from '../../../src-main/ssh/quote'
import { applyShippedOverlays, readContainerFile, startCount, upgradeContainer } from '../../sim/asrOverlays'
import { startFakeAsr, type FakeAsr } from '../../sim/http'
import { startSimKit, type SimKit } from '../../sim/testkit'

/**
 * The speech patches against the simulated cluster: real SSH, the sim's docker with the asr
 * container's own files, the fake asr for health. The services manager is stood in for by a
 * ServiceControl that runs `docker restart` over the same pool.
 */
describe('speech model patches against the sim', () => {
  let kit: SimKit
  let asr: FakeAsr
  let tmp: string
  let configured = true
  const clock = new ManualClock(Date.UTC(2026, 5, 1))
  const restarts: string[] = []
  const node2 = (): SimKit['sim']['node2'] => kit.sim.node2

  const control: ServiceControl = {
    locate: (name) =>
      name === 'asr' && configured
        ? { name: 'asr', ssh: kit.target(node2()), container: 'asr', baseUrl: asr.url }
        : null,
    restart: async (name, reason) => {
      restarts.push(`${name}: ${reason}`)
      const r = await kit.pool.exec(kit.target(node2()), `docker restart ${shq('asr')}`)
      if (r.code !== 0) throw new Error(r.stderr)
    },
  }
  // The health wait pauses on the manual clock: 120 s of waiting take no real time.
  const sleep = async (ms: number): Promise<void> => clock.advance(ms)
  const patches = (overlayDir = defaultOverlayDir()): SpeechPatches =>
    new SpeechPatches({ control, pool: kit.pool, logger: kit.logger, clock, overlayDir, sleep })

  beforeAll(async () => {
    asr = await startFakeAsr()
    kit = await startSimKit({
      clock,
      containers: {
        node2: [{ name: 'asr', image: 'nvcr.io/nim/nvidia/parakeet-tdt-0.6b-v2:1.0.0', ports: [[asr.port, 9000]] }],
      },
    })
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-overlays-'))
  })
  afterAll(async () => {
    await kit?.close()
    await asr?.close()
    fs.rmSync(tmp, { recursive: true, force: true })
  })
  beforeEach(async () => {
    configured = true
    await asr.setFault('none')
  })

  it('a fresh container has none of the overlays: missing, and the model is ready', async () => {
    const view = SpeechModelsView.parse(await patches().status())
    expect(view.error).toBeNull()
    expect(view.container).toBe('asr')
    expect(view.files.map((f) => f.name)).toEqual([...OVERLAY_FILES])
    for (const f of view.files) {
      expect(f).toMatchObject({ status: 'missing', container_sha256: null })
      expect(f.local_sha256).toMatch(/^[0-9a-f]{64}$/)
    }
    expect(view.model).toEqual({ ready: true, name: asr.model, detail: null })
  })

  it('reapply copies, verifies, checks syntax, restarts and waits for health; then in_sync', async () => {
    const before = startCount(node2())
    const result = StepResult.parse(await patches().reapply())
    expect(result.steps.filter((s) => !s.ok)).toEqual([])
    expect(result.ok).toBe(true)
    expect(result.steps.map((s) => s.step)).toEqual([
      'read the shipped overlays',
      ...OVERLAY_FILES.map((f) => `copy ${f}`),
      'verify copies (sha256)',
      'check Python syntax',
      'restart the asr container',
      'wait for health',
    ])
    expect(startCount(node2())).toBe(before + 1)
    // The bytes inside the container are exactly the shipped ones.
    for (const f of OVERLAY_FILES)
      expect(readContainerFile(node2(), 'asr', `/app/${f}`)).toEqual(fs.readFileSync(path.join(defaultOverlayDir(), f)))
    const view = await patches().status()
    expect(view.files.map((f) => f.status)).toEqual(OVERLAY_FILES.map(() => 'in_sync'))
    expect(view.files.every((f) => f.container_sha256 === f.local_sha256)).toBe(true)
  })

  it('after an asr upgrade the files drift (or go missing) until reapplied', async () => {
    await patches().reapply()
    upgradeContainer(node2(), 'asr')
    const drifted = await patches().status()
    const byName = Object.fromEntries(drifted.files.map((f) => [f.name, f.status]))
    expect(byName).toEqual({ 'diarize_logic.py': 'missing', 'diarizer.py': 'drift', 'asr_app.py': 'drift' })
    expect((await patches().reapply()).ok).toBe(true)
    expect((await patches().status()).files.every((f) => f.status === 'in_sync')).toBe(true)
  })

  it("the demo's asr, set up as after a reapply, reads in sync; an upgrade still brings the drift", async () => {
    upgradeContainer(node2(), 'asr')
    applyShippedOverlays(node2())
    const view = await patches().status()
    expect(view.error).toBeNull()
    expect(view.files.map((f) => f.status)).toEqual(OVERLAY_FILES.map(() => 'in_sync'))
    upgradeContainer(node2(), 'asr')
    expect((await patches().status()).files.some((f) => f.status !== 'in_sync')).toBe(true)
  })

  it('an overlay with a syntax error stops the reapply before the restart', async () => {
    const dir = path.join(tmp, 'broken')
    fs.mkdirSync(dir, { recursive: true })
    for (const f of OVERLAY_FILES) fs.copyFileSync(path.join(defaultOverlayDir(), f), path.join(dir, f))
    fs.appendFileSync(path.join(dir, 'asr_app.py'), '\ndef broken(:\n    pass\n')
    const starts = startCount(node2())
    const commandsBefore = node2().commands.length
    const restartsBefore = restarts.length

    const result = await patches(dir).reapply()

    expect(result.ok).toBe(false)
    const last = result.steps[result.steps.length - 1]!
    expect(last).toMatchObject({ step: 'check Python syntax', ok: false })
    expect(last.detail).toMatch(/SyntaxError/)
    expect(last.detail).toContain('/app/asr_app.py')
    expect(result.steps.some((s) => s.step.startsWith('restart'))).toBe(false)
    // Nothing restarted the container: not the control, not a command, not docker.
    expect(restarts.length).toBe(restartsBefore)
    expect(
      node2()
        .commands.slice(commandsBefore)
        .some((c) => /docker restart/.test(c)),
    ).toBe(false)
    expect(startCount(node2())).toBe(starts)
    // The broken copy stays inside the container (copied, then refused before the restart): it
    // matches the broken overlay and drifts from the shipped one, so the panel asks for a reapply.
    const view = await patches(dir).status()
    expect(view.files.find((f) => f.name === 'asr_app.py')?.status).toBe('in_sync')
    expect((await patches().status()).files.find((f) => f.name === 'asr_app.py')?.status).toBe('drift')
  })

  it('restart restarts the asr container and waits for health', async () => {
    const starts = startCount(node2())
    const result = await patches().restartOnly()
    expect(result).toMatchObject({ ok: true })
    expect(result.steps.map((s) => s.step)).toEqual(['restart the asr container', 'wait for health'])
    expect(result.steps[1]!.detail).toContain(asr.model)
    expect(startCount(node2())).toBe(starts + 1)
  })

  it('a service that never turns healthy fails the wait after 120 s on the clock, with bounded tries', async () => {
    await asr.setFault('refused')
    const t0 = clock.now()
    const requestsBefore = asr.requests.length
    const result = await patches().restartOnly()
    expect(result.ok).toBe(false)
    const wait = result.steps[result.steps.length - 1]!
    expect(wait).toMatchObject({ step: 'wait for health', ok: false })
    expect(wait.detail).toMatch(/not healthy within 120 s/)
    expect(clock.now() - t0).toBeGreaterThanOrEqual(HEALTH_WAIT_MS)
    expect(clock.now() - t0).toBeLessThan(HEALTH_WAIT_MS + 10_000)
    // A refused connection records no request; the tries are bounded by the clock, not endless.
    expect(asr.requests.length).toBe(requestsBefore)
    const status = await patches().status()
    expect(status.model.ready).toBe(false)
    expect(status.model.detail).toBeTruthy()
  })

  it('asr not configured: the status says so and reapply stops at once', async () => {
    configured = false
    const view = await patches().status()
    expect(view.error).toBe('asr is not configured')
    expect(view.files.every((f) => f.status === 'missing')).toBe(true)
    const result = await patches().reapply()
    expect(result.ok).toBe(false)
    expect(result.steps[result.steps.length - 1]).toMatchObject({ step: 'locate the asr service', ok: false })
  })

  it('a stopped container is an error in the status, not a silent "missing"', async () => {
    kit.sim.node2.runLocal('docker stop asr')
    try {
      const view = await patches().status()
      expect(view.error).toMatch(/not running/)
    } finally {
      kit.sim.node2.runLocal('docker start asr')
    }
  })

  it('a second reapply while one runs is refused (409)', async () => {
    const p = patches()
    const first = p.reapply()
    await expect(p.reapply()).rejects.toSatisfy((e: unknown) => e instanceof ApiError && e.status === 409)
    expect((await first).ok).toBe(true)
  })
})

describe('sha256sum output', () => {
  it('reads text and binary mode lines and ignores error lines', () => {
    const a = 'a'.repeat(64)
    const b = 'b'.repeat(64)
    const m = parseSha256sum(`${a}  /app/x.py\n${b} */app/y.py\nsha256sum: /app/z.py: No such file or directory\n`)
    expect([...m]).toEqual([
      ['/app/x.py', a],
      ['/app/y.py', b],
    ])
  })
})
