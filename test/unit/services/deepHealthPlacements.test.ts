import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import type { DeepHealthResult } from '../../../src-main/contract/services'
import type { EventName, EventPayload } from '../../../src-main/contract/events'
import { placementSubject } from '../../../src-main/services/deepHealthHook'
import { DeepHealth, type PlacementEngine, type PlacementEngines } from '../../../src-main/services/deepHealth'
import { DEEP_HEALTH_PROBES } from '../../../src-main/gateway/deepHealthProbes'
import { deepHealthHandlers } from '../../../src-main/services/deepHealthHandlers'
import type { ServiceControl, ServiceLocation } from '../../../src-main/services/types'
import type { RoleLocation, RoleName } from '../../../src-main/cluster/serviceDirectory'
import type { ExecResult } from '../../../src-main/ssh/pool'
import { startFakeLlm, type FakeLlm } from '../../sim/http'

const SSH = { host: '127.0.0.1', user: 'sim', port: 22 }
const WEDGE = { kind: 'error500', message: 'RuntimeError: Engine core initialization failed.' } as const

/** node1's llm through the services manager: restarts recorded (they must never happen here). */
class FakeControl implements ServiceControl {
  readonly restarts: string[] = []
  constructor(private readonly llmUrl: string) {}
  locate(name: string): ServiceLocation | null {
    return name === 'llm' ? { name, ssh: SSH, container: 'vllm_node', baseUrl: this.llmUrl } : null
  }
  async restart(name: string): Promise<void> {
    this.restarts.push(name)
  }
}

/** The models domain's placements as deep health sees them: two engines on loopback, restarts recorded. */
class FakePlacements implements PlacementEngines {
  readonly restarts: { id: string; reason: string }[] = []
  running = false
  constructor(readonly engines: PlacementEngine[]) {}
  list(): readonly PlacementEngine[] {
    return this.engines
  }
  busy(): boolean {
    return this.running
  }
  async restart(id: string, reason: string): Promise<string> {
    this.restarts.push({ id, reason })
    return `job-${this.restarts.length}`
  }
}

const directory = {
  role: (name: RoleName): RoleLocation => ({
    name,
    configured: false,
    baseUrl: null,
    hint: `${name} is not configured`,
    host: null,
    port: 0,
    ssh: null,
    container: name,
  }),
}

const pool = {
  exec: async (): Promise<ExecResult> => ({
    code: 0,
    signal: null,
    stdout: `running ${new Date(0).toISOString()} 0\n`,
    stderr: '',
  }),
}

const sink = {
  publish<K extends EventName>(_name: K, _data: EventPayload<K>): void {},
  report: async (): Promise<unknown> => null,
}

describe('deep health per placement', () => {
  let node1: FakeLlm
  let node3: FakeLlm
  let node45: FakeLlm
  const made: DeepHealth[] = []
  const dirs: string[] = []

  beforeAll(async () => {
    ;[node1, node3, node45] = await Promise.all([
      startFakeLlm({ model: 'sim/Qwen3-8B' }),
      startFakeLlm({ model: 'sim/coder' }),
      startFakeLlm({ model: 'sim/vision' }),
    ])
  })
  afterAll(async () => {
    await Promise.all([node1.close(), node3.close(), node45.close()])
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true })
  })
  afterEach(async () => {
    for (const d of made.splice(0)) d.stop()
    await Promise.all([node1.setFault('none'), node3.setFault('none'), node45.setFault('none')])
  })

  function rig(opts: { clock?: ManualClock; file?: string; since?: number | null } = {}) {
    const clock = opts.clock ?? new ManualClock(Date.UTC(2026, 0, 1))
    const control = new FakeControl(node1.url)
    const placements = new FakePlacements([
      { id: 'node3', baseUrl: node3.url, since: opts.since ?? null },
      { id: 'node4+node5', baseUrl: node45.url, since: null },
    ])
    const dh = new DeepHealth({
      control,
      directory,
      pool,
      connectivity: sink,
      events: sink,
      clock,
      logger: createLogger({ sink: new MemorySink() }),
      intervalS: 300,
      swapBusy: () => false,
      probes: DEEP_HEALTH_PROBES,
      placements,
      file: opts.file ?? null,
    })
    made.push(dh)
    return { dh, clock, control, placements }
  }

  const row = (dh: DeepHealth, service: string) => dh.view().services.find((s) => s.service === service)

  it('names placements: node1’s is the llm, the others llm@<id>', () => {
    expect(placementSubject('node1')).toBe('llm')
    expect(placementSubject('node1+node2')).toBe('llm')
    expect(placementSubject('node3')).toBe('llm@node3')
    expect(placementSubject('node4+node5')).toBe('llm@node4+node5')
  })

  it('probes every placement; a wedged one alone is restarted, through the placements, and only its counter moves', async () => {
    const { dh, clock, control, placements } = rig()
    clock.advance(10 * 60_000)
    await node3.setFault(WEDGE)
    const results = await dh.round()
    const by = (s: string) => results.find((r) => r.service === s)
    expect(results.map((r) => r.service).sort()).toEqual(['llm', 'llm@node3', 'llm@node4+node5'])
    expect(by('llm@node3')).toMatchObject({ ok: false, wedged: true, restart: { requested: true, done: true } })
    expect(by('llm@node3')!.restart.detail).toMatch(/node3/)
    expect(by('llm@node4+node5')).toMatchObject({ ok: true, wedged: false, restart: { requested: false } })
    expect(by('llm@node4+node5')!.note).toMatch(/one token from sim\/vision/)
    expect(by('llm')).toMatchObject({ ok: true })
    expect(placements.restarts).toEqual([{ id: 'node3', reason: expect.stringMatching(/engine core/) }])
    expect(control.restarts).toEqual([])
    expect(row(dh, 'llm@node3')).toMatchObject({ configured: true, total_restarts: 1, restarts_last_30m: 1 })
    expect(row(dh, 'llm@node4+node5')).toMatchObject({ configured: true, total_restarts: 0, last_restart_at: null })
    expect(row(dh, 'llm')).toMatchObject({ total_restarts: 0 })
  })

  it('keeps the rate limits per placement: one’s cap never uses up another’s budget', async () => {
    const { dh, clock, placements } = rig()
    await node3.setFault(WEDGE)
    await node45.setFault(WEDGE)
    const t0 = clock.now()
    const at = async (s: number, subject: 'llm@node3' | 'llm@node4+node5') => {
      clock.set(t0 + s * 1000)
      return (await dh.run(subject)).restart
    }
    expect(await at(10, 'llm@node3')).toMatchObject({ done: false, held_by: 'grace' })
    expect(await at(61, 'llm@node3')).toMatchObject({ done: true })
    expect(await at(131, 'llm@node3')).toMatchObject({ done: false, held_by: 'cooldown' })
    expect(await at(181, 'llm@node3')).toMatchObject({ done: true })
    expect(await at(301, 'llm@node3')).toMatchObject({ done: true })
    expect(await at(500, 'llm@node3')).toMatchObject({ done: false, held_by: 'cap' })
    // The other placement's budget is whole: no cooldown, no cap from node3's restarts.
    expect(await at(501, 'llm@node4+node5')).toMatchObject({ done: true })
    expect(placements.restarts.map((r) => r.id)).toEqual(['node3', 'node3', 'node3', 'node4+node5'])
    expect(row(dh, 'llm@node3')).toMatchObject({ restarts_last_30m: 3, total_restarts: 3 })
    expect(row(dh, 'llm@node4+node5')).toMatchObject({ restarts_last_30m: 1, total_restarts: 1 })
  })

  it('restarts no placement while a placement job runs, and gives a placement its grace after it came up', async () => {
    const { dh, clock, placements } = rig()
    clock.advance(10 * 60_000)
    await node3.setFault(WEDGE)
    placements.running = true
    const held = (await dh.run('llm@node3')).restart
    expect(held).toMatchObject({ requested: true, done: false, held_by: 'swap' })
    expect(held.detail).toMatch(/placement job/)
    expect(placements.restarts).toEqual([])
    placements.running = false
    placements.engines[0] = { ...placements.engines[0]!, since: clock.now() - 20_000 }
    expect((await dh.run('llm@node3')).restart).toMatchObject({ done: false, held_by: 'grace' })
    clock.advance(45_000)
    expect((await dh.run('llm@node3')).restart).toMatchObject({ done: true })
  })

  it('keeps placement results and counters in the file, and still loads a file from before placements', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-deep-health-'))
    dirs.push(dir)
    const file = path.join(dir, 'deep-health.json')
    const clock = new ManualClock(Date.UTC(2026, 0, 1))
    const first = rig({ clock, file })
    clock.advance(10 * 60_000)
    await node3.setFault(WEDGE)
    const failed = await first.dh.run('llm@node3')
    expect(failed.restart.done).toBe(true)
    first.dh.stop()
    const saved = JSON.parse(fs.readFileSync(file, 'utf8')) as { services: Record<string, { total: number }> }
    expect(saved.services['llm@node3']).toMatchObject({ total: 1 })
    const again = rig({ clock, file })
    expect(row(again.dh, 'llm@node3')).toMatchObject({ total_restarts: 1, last_restart_at: failed.at })
    expect(row(again.dh, 'llm@node3')!.last).toEqual(failed)
    expect(again.dh.latest('llm@node3')).toEqual(failed)

    // A file written before placements: only asr, tts and llm.
    const old: DeepHealthResult = {
      service: 'llm',
      ok: false,
      at: 5,
      latency_ms: 3,
      error: 'HTTP 500',
      note: null,
      wedged: true,
      restart: { requested: true, done: true, held_by: null, detail: 'restarted vllm_node (HTTP 500)' },
    }
    fs.writeFileSync(
      file,
      JSON.stringify({
        services: {
          llm: { last: old, recent: [5], total: 2, last_restart: 5 },
          asr: { last: null, recent: [], total: 0, last_restart: null },
        },
      }),
    )
    const fromOld = rig({ clock, file })
    expect(row(fromOld.dh, 'llm')).toMatchObject({ last: old, total_restarts: 2, last_restart_at: 5 })
    expect(row(fromOld.dh, 'llm@node3')).toMatchObject({ last: null, total_restarts: 0 })
  })

  it('runs a placement’s probe through the handlers and the gateway hook; refuses an unknown placement', async () => {
    const { dh } = rig()
    const h = deepHealthHandlers(dh)
    const ctx = {} as Parameters<typeof h.runDeepHealth>[1]
    expect(await h.runDeepHealth({ service: 'llm@node4+node5' }, ctx)).toMatchObject({
      service: 'llm@node4+node5',
      ok: true,
    })
    await expect(h.runDeepHealth({ service: 'llm@node9' }, ctx)).rejects.toMatchObject({ status: 409 })
    await expect(h.runDeepHealth({ service: 'llm@nowhere' }, ctx)).rejects.toMatchObject({ status: 404 })
    expect(dh.requestProbe('llm@node3', 'the gateway saw a 500')).toBe('started')
    expect(dh.requestProbe('llm@node9', 'x')).toBe('unavailable')
  })
})
