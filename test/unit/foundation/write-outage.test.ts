import fs from 'node:fs'
import os from 'node:os'
import { describe, expect, it } from 'vitest'
import { createLogger, MemorySink, Redactor } from '../../../src-main/lib/logger'
import { WriteOutage } from '../../../src-main/lib/writeOutage'

/** Issue 42: background database writes a full disk refuses are told once per outage, not once a tick. */
function outage(): { o: WriteOutage; logs: MemorySink; now: { t: number } } {
  const logs = new MemorySink()
  const now = { t: 1000 }
  const logger = createLogger({ redactor: new Redactor(), sink: logs, level: 'debug' })
  const o = new WriteOutage({
    logger,
    clock: { now: () => now.t },
    dataDir: fs.mkdtempSync(`${os.tmpdir()}/tandem-outage-`),
    what: 'renewals',
    meanwhile: 'billed by a later tick',
  })
  return { o, logs, now }
}

const full = Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' })

describe('WriteOutage', () => {
  it('logs the first refusal of an outage, counts the rest, and says when writes go through again', () => {
    const { o, logs, now } = outage()
    o.failure(full, 'renewal tick failed')
    now.t = 2000
    o.failure(full, 'renewal tick failed')
    o.fail(full, 3)
    expect(logs.lines.filter((l) => l.includes('renewals: no space left for the database'))).toHaveLength(1)
    expect(o.state).toEqual({ failing_since: 1000, failed_writes: 5 })
    o.written()
    expect(o.failing).toBe(false)
    expect(logs.lines.filter((l) => l.includes('renewals is written again'))).toHaveLength(1)
    o.failure(full, 'renewal tick failed')
    expect(logs.lines.filter((l) => l.includes('no space left'))).toHaveLength(2)
  })

  it('logs a failure that is not a full disk every time, as before, and starts no outage', () => {
    const { o, logs } = outage()
    const other = Object.assign(new Error('no such table'), { code: 'SQLITE_ERROR' })
    o.failure(other, 'renewal tick failed')
    o.failure(other, 'renewal tick failed')
    expect(logs.lines.filter((l) => l.includes('renewal tick failed'))).toHaveLength(2)
    expect(o.failing).toBe(false)
  })
})
