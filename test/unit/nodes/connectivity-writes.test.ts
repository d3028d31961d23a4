import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { atomicWriteFile } from '../../../src-main/lib/files'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { ConnectivityStore, MAX_EVENTS } from '../../../src-main/nodes/connectivity'

// Every durable write goes through atomicWriteFile: count them.
vi.mock('../../../src-main/lib/files', async (importOriginal) => {
  const orig = await importOriginal<typeof import('../../../src-main/lib/files')>()
  return { ...orig, atomicWriteFile: vi.fn(orig.atomicWriteFile) }
})

describe('connectivity persistence is coalesced', () => {
  let dir: string
  let file: string
  let clock: ManualClock
  const writes = () => vi.mocked(atomicWriteFile).mock.calls.filter((c) => c[0] === file)
  const make = () => new ConnectivityStore(file, clock, createLogger({ sink: new MemorySink() }))

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-connw-'))
    file = path.join(dir, 'connectivity.json')
    clock = new ManualClock()
    vi.mocked(atomicWriteFile).mockClear()
  })
  afterEach(() => {
    vi.useRealTimers()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('300 reports in one second cost one durable write, then at most one per second of the clock', async () => {
    const s = make()
    for (let i = 0; i < 300; i++) await s.report('llm', { ok: false, source: `app${i}`, error: 'x'.repeat(2000) })
    expect(writes()).toHaveLength(1)
    clock.advance(999)
    await s.report('llm', { ok: true })
    expect(writes()).toHaveLength(1)
    clock.advance(1)
    await s.report('llm', { ok: true })
    expect(writes()).toHaveLength(2)
    // The second write carried everything so far.
    expect(JSON.parse(fs.readFileSync(file, 'utf8')).events).toEqual(s.view().events)
    // No write is bigger than the store it holds.
    const storeBytes = Buffer.byteLength(JSON.stringify(s.view()) + '\n')
    for (const [, data] of writes()) expect(Buffer.byteLength(data as string)).toBeLessThanOrEqual(storeBytes)
    await s.flush()
  })

  it('flush (stop) writes what is pending, once', async () => {
    const s = make()
    await s.report('asr', { ok: false })
    await s.report('asr', { ok: true, source: 'late' })
    expect(writes()).toHaveLength(1)
    await s.flush()
    expect(writes()).toHaveLength(2)
    await s.flush()
    expect(writes()).toHaveLength(2)
    expect(make().view()).toEqual(s.view())
  })

  it('a pending change is written by the timer once a second of the clock has passed', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const s = make()
    await s.observe('node1', false)
    await s.observe('node1', true)
    expect(writes()).toHaveLength(1)
    // The timer fires, but the clock says less than a second: it waits.
    vi.advanceTimersByTime(1000)
    expect(writes()).toHaveLength(1)
    clock.advance(1000)
    vi.advanceTimersByTime(1000)
    expect(writes()).toHaveLength(2)
    expect(JSON.parse(fs.readFileSync(file, 'utf8')).subjects.node1.state).toBe('up')
    await s.flush()
  })
})

describe('reports never evict transitions', () => {
  let dir: string
  let file: string
  let clock: ManualClock
  const make = () => new ConnectivityStore(file, clock, createLogger({ sink: new MemorySink() }))
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-connv-'))
    file = path.join(dir, 'connectivity.json')
    clock = new ManualClock()
  })
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

  it('300 anonymous reports keep every transition; the oldest reports go first', async () => {
    const s = make()
    for (let i = 0; i < 5; i++) {
      clock.advance(60_000)
      await s.observe('node2', i % 2 === 0 ? false : true)
    }
    for (let i = 0; i < 300; i++) await s.report('llm', { ok: false, source: `anon${i}` })
    const events = s.view().events
    expect(events).toHaveLength(MAX_EVENTS)
    expect(events.filter((e) => e.kind === 'transition')).toHaveLength(5)
    const sources = events.flatMap((e) => (e.kind === 'report' ? [e.source] : []))
    expect(sources[0]).toBe('anon105')
    expect(sources.at(-1)).toBe('anon299')
    await s.flush()
    expect(
      make()
        .view()
        .events.filter((e) => e.kind === 'transition'),
    ).toHaveLength(5)
  })

  it('a transition evicts the oldest report; a report is not kept when the log holds only transitions', async () => {
    const s = make()
    for (let i = 0; i < MAX_EVENTS; i++) {
      clock.advance(1000)
      await s.observe('node1', i % 2 === 1)
    }
    expect(s.view().events.every((e) => e.kind === 'transition')).toBe(true)
    const report = await s.report('node1', { ok: false, source: 'app' })
    expect(report.kind).toBe('report')
    expect(s.view().events.some((e) => e.kind === 'report')).toBe(false)
    // A new transition still pushes out the oldest transition.
    clock.advance(1000)
    const first = s.view().events[0]
    await s.observe('node1', s.state('node1')?.state !== 'up')
    expect(s.view().events).toHaveLength(MAX_EVENTS)
    expect(s.view().events[0]).not.toEqual(first)
    await s.flush()
  })
})
