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

describe('followSwaps', () => {
  /** The plans followSwaps marks, fed by a bus. */
  const rig = () => {
    const bus = new EventBus(new ManualClock())
    const plans: (string | null)[] = []
    followSwaps(bus, { plan: (subject, reason) => void (subject === 'llm' && plans.push(reason)) })
    return { bus, plans }
  }

  it('marks a swap on node1 as planned from the step of placements.changed, and clears it when the job ends', () => {
    const { bus, plans } = rig()
    bus.publish('placements.changed', placementsChanged(null))
    bus.publish('placements.changed', placementsChanged(placementStep({ phase: 'validating' })))
    bus.publish('placements.changed', placementsChanged(placementStep({ phase: 'loading', loaded: null })))
    expect(plans).toEqual(['planned swap: org/qwen → coder'])
    bus.publish('placements.changed', placementsChanged(placementStep({ phase: 'ready' })))
    expect(plans).toEqual(['planned swap: org/qwen → coder', null])
  })

  it('leaves the llm unmarked for a job on other nodes and for the swap.state alias alone', () => {
    const { bus, plans } = rig()
    bus.publish('placements.changed', placementsChanged(placementStep({ nodes: ['node3'], placement_id: 'node3' })))
    bus.publish('swap.state', placementStep({ phase: 'validating', job_id: 'swap-2' }))
    expect(plans).toEqual([])
  })
})
