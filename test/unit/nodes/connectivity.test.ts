import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { ConnectivityStore, followSwaps, MAX_EVENTS, parseStore } from '../../../src-main/nodes/connectivity'
import { EventBus } from '../../../src-main/platform/eventBus'
import { keptAsideCopy } from '../../helpers/keptAside'
import { placementsChanged, placementStep } from '../../helpers/placementStep'

describe('ConnectivityStore', () => {
  let dir: string
  let file: string
  let clock: ManualClock
  let sink: MemorySink
  const make = () => new ConnectivityStore(file, clock, createLogger({ sink, level: 'debug' }))

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-conn-'))
    file = path.join(dir, 'connectivity.json')
    clock = new ManualClock()
    sink = new MemorySink()
  })
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

  it('records a transition only when the state changes, with the prior period length', async () => {
    const s = make()
    expect(await s.observe('node1', true)).toBeNull()
    clock.advance(90_000)
    expect(await s.observe('node1', true)).toBeNull()
    clock.advance(30_000)
    const down = await s.observe('node1', false, 'connection refused')
    expect(down).toMatchObject({ kind: 'transition', state: 'down', up_seconds: 120, detail: 'connection refused' })
    clock.advance(10_000)
    expect(await s.observe('node1', false)).toBeNull()
    clock.advance(35_000)
    const up = await s.observe('node1', true)
    expect(up).toMatchObject({ kind: 'transition', state: 'up', down_seconds: 45 })
    expect(s.view().events.filter((e) => e.kind === 'transition')).toHaveLength(2)
    expect(s.state('node1')).toEqual({ state: 'up', last_change: clock.now() })
  })

  it('a first sighting that is down is recorded; a first sighting that is up is not', async () => {
    const s = make()
    await s.observe('llm', true)
    await s.observe('asr', false, 'refused')
    expect(s.view().events).toEqual([expect.objectContaining({ subject: 'asr', state: 'down' })])
  })

  it('reports are appended and never change state', async () => {
    const s = make()
    await s.observe('asr', true)
    const e = await s.report('asr', { ok: false, source: 'notes-app', error: 'HTTP 500', ms: 812 })
    expect(e).toMatchObject({
      kind: 'report',
      subject: 'asr',
      ok: false,
      source: 'notes-app',
      error: 'HTTP 500',
      ms: 812,
    })
    expect(s.state('asr')?.state).toBe('up')
  })

  it('persists atomically and reloads', async () => {
    const s = make()
    await s.observe('node2', false)
    await s.setMac('node2', '4c:bb:47:2e:91:0b')
    await s.report('llm', { ok: true })
    await s.flush()
    const again = make()
    expect(again.view()).toEqual(s.view())
    expect(again.mac('node2')).toBe('4c:bb:47:2e:91:0b')
    expect(fs.statSync(file).mode & 0o777).toBe(0o600)
  })

  it('concurrent writers lose nothing and the log holds at most 200 events', async () => {
    const s = make()
    await Promise.all(Array.from({ length: 150 }, (_, i) => s.report('llm', { ok: i % 2 === 0, source: `app${i}` })))
    await s.flush()
    let onDisk = JSON.parse(fs.readFileSync(file, 'utf8'))
    expect(onDisk.events).toHaveLength(150)
    expect(new Set(onDisk.events.map((e: { source: string }) => e.source)).size).toBe(150)
    await Promise.all([
      ...Array.from({ length: 120 }, (_, i) => s.report('tts', { ok: true, source: `more${i}` })),
      s.observe('node1', false),
      s.setMac('node1', 'aa:bb:cc:dd:ee:01'),
    ])
    await s.flush()
    onDisk = JSON.parse(fs.readFileSync(file, 'utf8'))
    expect(onDisk.events).toHaveLength(MAX_EVENTS)
    // The newest are kept, oldest dropped.
    expect(onDisk.events.at(-1)).toMatchObject({ subject: 'node1', kind: 'transition', state: 'down' })
    expect(onDisk.events.some((e: { source?: string }) => e.source === 'more119')).toBe(true)
    expect(onDisk.events.some((e: { source?: string }) => e.source === 'app0')).toBe(false)
    expect(onDisk.macs.node1).toBe('aa:bb:cc:dd:ee:01')
  })

  it('a corrupt file is kept aside and a fresh store starts', async () => {
    fs.writeFileSync(file, '{"events": [ {"subject": "node1", "kin')
    const s = make()
    expect(s.view()).toEqual({ macs: {}, subjects: {}, events: [] })
    expect(sink.lines.join('\n')).toContain(`${file} is malformed`)
    expect(sink.lines.join('\n')).toContain(`moved aside to ${keptAsideCopy(file)}`)
    await s.report('x', { ok: true })
    expect(JSON.parse(fs.readFileSync(file, 'utf8')).events).toHaveLength(1)
  })

  it('migrates legacy spark events on read and skips malformed ones', () => {
    const v = parseStore({
      macs: { node1: '4c:bb:47:2e:91:0a', bad: 5 },
      subjects: { node1: { state: 'down', last_change: 1 }, broken: { state: 'sideways' } },
      events: [
        { spark: 'node1', at: 5, state: 'down', up_seconds: 60 },
        { spark: 'spark2', ts: 1700000000.5, up: true, down_seconds: 12 },
        { subject: 'asr', kind: 'report', at: 7, ok: false, source: 'app', error: 'x', detail: null, ms: 3 },
        { subject: 'asr', kind: 'mystery' },
        'garbage',
      ],
    })
    expect(v.events).toEqual([
      { subject: 'node1', kind: 'transition', at: 5, state: 'down', up_seconds: 60 },
      { subject: 'spark2', kind: 'transition', at: 1700000000500, state: 'up', down_seconds: 12 },
      { subject: 'asr', kind: 'report', at: 7, ok: false, source: 'app', error: 'x', detail: null, ms: 3 },
    ])
    expect(v.macs).toEqual({ node1: '4c:bb:47:2e:91:0a' })
    // node1's saved state wins over its events; spark2 had none, so its last transition gives it.
    expect(v.subjects).toEqual({
      node1: { state: 'down', last_change: 1 },
      spark2: { state: 'up', last_change: 1700000000500 },
    })
  })
})

describe('ConnectivityStore across a restart and an outage (issue 46)', () => {
  let dir: string
  let file: string
  let clock: ManualClock
  const make = () => new ConnectivityStore(file, clock, createLogger({ sink: new MemorySink(), level: 'debug' }))

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-conn-'))
    file = path.join(dir, 'connectivity.json')
    clock = new ManualClock()
  })
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

  it('an up period is never counted across a restart: the first down after it names no length from before', async () => {
    const before = make()
    await before.observe('llm', false)
    clock.advance(5_000)
    await before.observe('llm', true)
    await before.flush()
    // The daemon is off for twenty minutes, then starts again and sees the llm up.
    clock.advance(1_200_000)
    const after = make()
    await after.observe('llm', true)
    clock.advance(30_000)
    const down = await after.observe('llm', false)
    expect(down).toMatchObject({ state: 'down', up_seconds: 30 })
  })

  it('a change seen first after a restart records no length for the period that spans it', async () => {
    const before = make()
    await before.observe('llm', false)
    clock.advance(5_000)
    await before.observe('llm', true)
    await before.flush()
    clock.advance(1_220_000)
    const down = await make().observe('llm', false)
    expect(down).toMatchObject({ state: 'down' })
    expect(down).not.toHaveProperty('up_seconds')
  })

  it('an outage starts when the first failed probe began, not when its timeout ended', async () => {
    const s = make()
    await s.observe('node2', true)
    clock.advance(60_000)
    const probeBegan = clock.now()
    clock.advance(6_000)
    const down = await s.observe('node2', false, 'timed out', probeBegan)
    expect(down).toMatchObject({ at: probeBegan, up_seconds: 60 })
    clock.advance(14_000)
    expect(await s.observe('node2', true)).toMatchObject({ down_seconds: 20 })
  })
})

describe('followSwaps', () => {
  const rig = () => {
    const clock = new ManualClock()
    const bus = new EventBus(clock)
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-conn-'))
    const store = new ConnectivityStore(path.join(dir, 'c.json'), clock, createLogger({ sink: new MemorySink() }))
    followSwaps(bus, store)
    const transitions = () => store.view().events.filter((e) => e.kind === 'transition')
    return { bus, clock, store, transitions, done: () => fs.rmSync(dir, { recursive: true, force: true }) }
  }

  it("records a 10 s swap from the job's own start and end, though no probe saw the llm down", async () => {
    const { bus, clock, store, transitions, done } = rig()
    await store.observe('llm', true)
    clock.advance(60_000)
    const start = clock.now()
    bus.publish('placements.changed', placementsChanged(placementStep({ phase: 'validating' })))
    clock.advance(4_000)
    bus.publish('placements.changed', placementsChanged(placementStep({ phase: 'loading', loaded: null })))
    // A probe during the job does not decide the llm's state: the job does.
    expect(await store.observe('llm', true)).toBeNull()
    clock.advance(6_000)
    bus.publish('placements.changed', placementsChanged(placementStep({ phase: 'ready' })))
    await store.flush()
    // Catalog keys on both sides, though the model left is served under its repo id.
    expect(transitions()).toEqual([
      expect.objectContaining({ state: 'down', at: start, up_seconds: 60, planned: 'planned swap: qwen → coder' }),
      expect.objectContaining({
        state: 'up',
        at: start + 10_000,
        down_seconds: 10,
        planned: 'planned swap: qwen → coder',
      }),
    ])
    // After the job the probes decide again.
    clock.advance(1_000)
    expect(await store.observe('llm', false)).toMatchObject({ state: 'down' })
    done()
  })

  it('names the model left by its catalog key from the placements view when the step has none', async () => {
    const { bus, transitions, store, done } = rig()
    const view = placementsChanged(placementStep({ loaded: null }))
    view.placements = [
      {
        id: 'node1',
        key: 'qwen3-coder',
        served: 'Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8',
        nodes: ['node1'],
        head: 'node1',
        layout: null,
        state: 'ready',
        reason: null,
        since: 0,
        memory_bytes_per_node: null,
      },
    ]
    bus.publish('placements.changed', view)
    await store.flush()
    expect(transitions()[0]?.planned).toBe('planned swap: qwen3-coder → coder')
    done()
  })

  it('a failed job ends the plan and leaves the state to the probes', async () => {
    const { bus, clock, store, transitions, done } = rig()
    bus.publish('placements.changed', placementsChanged(placementStep({ phase: 'validating' })))
    clock.advance(3_000)
    bus.publish('placements.changed', placementsChanged(placementStep({ phase: 'failed' })))
    await store.flush()
    expect(transitions().map((t) => t.state)).toEqual(['down'])
    expect(await store.observe('llm', true)).toMatchObject({ state: 'up', down_seconds: 3 })
    done()
  })

  it('leaves the llm alone for a job on other nodes and for the swap.state alias alone', async () => {
    const { bus, store, transitions, done } = rig()
    bus.publish('placements.changed', placementsChanged(placementStep({ nodes: ['node3'], placement_id: 'node3' })))
    bus.publish('swap.state', placementStep({ phase: 'validating', job_id: 'swap-2' }))
    await store.flush()
    expect(transitions()).toEqual([])
    done()
  })
})
