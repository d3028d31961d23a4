import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { HardwareSample } from '../../../src-main/contract/nodes'
import { ManualClock } from '../../../src-main/lib/clock'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { HardwareHistory, HISTORY_MS, MAX_SAMPLES, SAVE_EVERY_MS } from '../../../src-main/nodes/hardwareHistory'

/** Hardware history survives a restart in a bounded file under DATA_DIR (issue 13, item 5). */
let dir: string
let file: string
let clock: ManualClock
let sink: MemorySink
const logger = () => createLogger({ sink })
const sample = (at: number, load1 = 1): HardwareSample => ({
  at,
  gpu_utilization_pct: 50,
  gpu_temperature_c: 60,
  gpu_power_w: 100,
  load1,
  ram_used_bytes: 8e9,
  ram_total_bytes: 128e9,
  gpu_memory_used_bytes: 40e9,
  gpu_memory_total_bytes: 128e9,
  engine_memory_bytes: null,
})

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-hwh-'))
  file = path.join(dir, 'hardware-history.json')
  clock = new ManualClock(Date.UTC(2026, 10, 23, 8))
  sink = new MemorySink()
})
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

describe('hardware history file', () => {
  it('survives a restart: a new store reads what the old one saved', () => {
    const a = new HardwareHistory(file, clock, logger())
    for (let i = 0; i < 5; i++) {
      a.remember('node1', sample(clock.now(), i))
      clock.advance(15_000)
    }
    a.flush()
    const b = new HardwareHistory(file, clock, logger())
    expect(b.view().node1.map((s) => s.load1)).toEqual([0, 1, 2, 3, 4])
    expect(b.view().node1[0]?.ram_used_bytes).toBe(8e9)
  })

  it('keeps the nodes NODES lists across a restart, and drops one no longer configured', () => {
    const a = new HardwareHistory(file, clock, logger(), ['node1', 'node2', 'node3', 'node4'])
    a.remember('node3', sample(clock.now(), 3))
    a.remember('node4', sample(clock.now(), 4))
    a.remember('node9', sample(clock.now(), 9))
    a.flush()
    expect(Object.keys(a.view())).toEqual(['node1', 'node2', 'node3', 'node4'])
    const b = new HardwareHistory(file, clock, logger(), ['node1', 'node2', 'node3'])
    expect(b.view().node3?.map((s) => s.load1)).toEqual([3])
    expect(b.view().node4).toBeUndefined()
    b.remember('node3', sample(clock.now(), 5))
    b.flush()
    const saved = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>
    expect(Object.keys(saved).sort()).toEqual(['node1', 'node2', 'node3', 'version'])
  })

  it('writes at most every SAVE_EVERY_MS, and the rest on flush', () => {
    const h = new HardwareHistory(file, clock, logger())
    h.remember('node1', sample(clock.now()))
    const saved = () => (JSON.parse(fs.readFileSync(file, 'utf8')) as { node1: unknown[] }).node1.length
    expect(saved()).toBe(1)
    clock.advance(SAVE_EVERY_MS / 2)
    h.remember('node1', sample(clock.now()))
    expect(saved()).toBe(1)
    h.flush()
    expect(saved()).toBe(2)
  })

  it('is bounded: old readings and readings beyond MAX_SAMPLES are dropped', () => {
    const h = new HardwareHistory(file, clock, logger())
    for (let i = 0; i < MAX_SAMPLES + 300; i++) {
      h.remember('node2', sample(clock.now()))
      clock.advance(100)
    }
    h.flush()
    expect(h.view().node2.length).toBe(MAX_SAMPLES)
    const onDisk = JSON.parse(fs.readFileSync(file, 'utf8')) as { node2: unknown[] }
    expect(onDisk.node2.length).toBeLessThanOrEqual(MAX_SAMPLES)
    clock.advance(HISTORY_MS + 1)
    expect(new HardwareHistory(file, clock, logger()).view().node2).toEqual([])
  })

  it('reports a malformed file, keeps it aside and starts empty', () => {
    fs.writeFileSync(file, '{"version":1,"node1":[{"at":"yesterday"}]')
    const h = new HardwareHistory(file, clock, logger())
    expect(h.view()).toEqual({ node1: [], node2: [] })
    const keptAs = `${file}.corrupt-20261123T080000Z`
    expect(fs.readFileSync(keptAs, 'utf8')).toBe('{"version":1,"node1":[{"at":"yesterday"}]')
    // One line says what happened, with where the file is and where the old one was kept.
    const line = sink.lines.find((l) => l.includes('is malformed'))
    expect(line).toContain(file)
    expect(line).toContain(`moved aside to ${keptAs}`)
    expect(line).toContain(' WARN ')
    h.remember('node1', sample(clock.now()))
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toMatchObject({ version: 1, node1: [{ load1: 1 }] })
  })

  it('reads a file from before RAM and GPU memory were recorded', () => {
    fs.writeFileSync(
      file,
      JSON.stringify({
        version: 1,
        node1: [{ at: clock.now(), gpu_utilization_pct: 1, gpu_temperature_c: 2, gpu_power_w: 3, load1: 4 }],
        node2: [],
      }),
    )
    expect(new HardwareHistory(file, clock, logger()).view().node1[0]).toMatchObject({ load1: 4, ram_used_bytes: null })
  })
})
