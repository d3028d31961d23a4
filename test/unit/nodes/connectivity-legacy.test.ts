import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { ConnectivityStore } from '../../../src-main/nodes/connectivity'
import { keptAsideCopy } from '../../helpers/keptAside'

// A store written by the legacy service: events name their node in `spark`, times are epoch
// seconds in `ts`, and a transition says only which period ended (no state).
const FIXTURE = path.join(__dirname, '../../fixtures/nodes/connectivity-legacy.json')

describe('a legacy connectivity.json is migrated on read (spec 1, 2.7 rule 3)', () => {
  let dir: string
  let file: string
  let sink: MemorySink
  let clock: ManualClock
  const make = () => new ConnectivityStore(file, clock, createLogger({ sink, level: 'debug' }))

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-conn-legacy-'))
    file = path.join(dir, 'connectivity.json')
    fs.copyFileSync(FIXTURE, file)
    sink = new MemorySink()
    clock = new ManualClock(1761903760_000)
  })
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

  it('keeps spark transitions that carry only a duration, with the state that duration implies', () => {
    const v = make().view()
    expect(v.events).toEqual([
      { subject: 'spark2', kind: 'transition', at: 1761900000250, state: 'down', up_seconds: 86400 },
      { subject: 'spark2', kind: 'transition', at: 1761900125750, state: 'up', down_seconds: 125 },
      { subject: 'spark1', kind: 'transition', at: 1761903600000, state: 'down', up_seconds: 3600 },
      { subject: 'spark1', kind: 'transition', at: 1761903700000, state: 'up', down_seconds: 100 },
    ])
    expect(v.macs).toEqual({ spark1: '4c:bb:47:2e:91:0a', spark2: '4c:bb:47:2e:91:0b' })
  })

  it('skips and reports the events it cannot read, and the file is not set aside', () => {
    make()
    expect(sink.lines.join('\n')).toMatch(/4 malformed event\(s\) skipped/)
    expect(keptAsideCopy(file)).toBeNull()
  })

  it('seeds each subject from its last transition, so the next poll records the right period', async () => {
    const s = make()
    expect(s.state('spark1')).toEqual({ state: 'up', last_change: 1761903700000 })
    expect(s.state('spark2')).toEqual({ state: 'up', last_change: 1761900125750 })
    expect(await s.observe('spark1', true)).toBeNull()
    clock.advance(60_000)
    // The period is counted from this run's first sighting: never across the time before the daemon started (issue 46).
    const down = await s.observe('spark1', false)
    expect(down).toMatchObject({ subject: 'spark1', state: 'down', up_seconds: 60 })
    // A change seen first is still recorded (the seeded state is known), without a length from before the start.
    const spark2 = await s.observe('spark2', false)
    expect(spark2).toMatchObject({ subject: 'spark2', state: 'down' })
    expect(spark2).not.toHaveProperty('up_seconds')
  })
})
