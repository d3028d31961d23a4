import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createLogger, MemorySink } from '../../../src-main/core/logger'
import { sqliteModuleFile } from '../../../src-main/core/nativeBinding'
import { WalCheckpointer } from '../../../src-main/core/walCheckpointer'
import { openLicensingDb, type LicensingDb } from '../../../src-main/licensing/db'
import type { LicensingModule } from '../../../src-main/licensing/module'
import { startDaemon } from '../../helpers/daemon'
import { waitFor } from '../../integration/gateway/setup'

/**
 * The licensing database's write-ahead log is checkpointed by a worker thread, so no commit on the
 * event loop copies it into the database file; if the worker is gone, the main connection does it
 * again, as SQLite does by default.
 */

const dirs: string[] = []
const dbs: LicensingDb[] = []
const checkpointers: WalCheckpointer[] = []

function freshDb(): { db: LicensingDb; file: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-wal-'))
  dirs.push(dir)
  const file = path.join(dir, 'licensing.sqlite')
  const db = openLicensingDb(file)
  db.exec('CREATE TABLE filler (id INTEGER PRIMARY KEY, body BLOB NOT NULL)')
  dbs.push(db)
  return { db, file }
}

/** About 6 MB of rows in commits of 100: far more pages than SQLite's 1,000-page automatic checkpoint. */
function fill(db: LicensingDb, commits = 15): void {
  const insert = db.prepare('INSERT INTO filler (body) VALUES (?)')
  const row = Buffer.alloc(4000, 7)
  for (let c = 0; c < commits; c++) db.transaction(() => Array.from({ length: 100 }, () => insert.run(row)))()
}

const pages = (file: string): number => Math.floor(fs.statSync(file).size / 4096)
const logger = () => createLogger({ sink: new MemorySink() })

afterEach(async () => {
  for (const c of checkpointers.splice(0)) await c.stop()
  for (const db of dbs.splice(0)) if (db.open) db.close()
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true })
})

describe('WAL checkpoints on a worker thread', () => {
  it('leaves every commit on the main connection free of checkpoints, and copies the log when asked', async () => {
    const { db, file } = freshDb()
    const cp = WalCheckpointer.start(db, file, logger(), { intervalMs: 3_600_000 })!
    checkpointers.push(cp)
    expect(await cp.started).toBe(true)
    expect(cp.active).toBe(true)
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(0)
    const before = pages(file)
    fill(db)
    // Nothing reached the database file: every page of 6 MB is still in the log.
    expect(pages(file)).toBe(before)
    const r = await cp.checkpoint()
    expect(r.log).toBeGreaterThan(1400)
    expect(r.checkpointed).toBe(r.log)
    expect(pages(file)).toBeGreaterThan(before + 1400)
    expect(db.prepare('SELECT count(*) FROM filler').pluck().get()).toBe(1500)
    // The whole log is in the file, so the next commit starts it over: it stays as long as one commit.
    db.prepare('INSERT INTO filler (body) VALUES (?)').run(Buffer.alloc(10))
    const after = await cp.checkpoint()
    expect(after.log).toBeLessThan(10)
    expect(after.checkpointed).toBe(after.log)
  })

  it('hands checkpoints back to the main connection when stopped', async () => {
    const { db, file } = freshDb()
    const cp = WalCheckpointer.start(db, file, logger(), { intervalMs: 3_600_000 })!
    expect(await cp.started).toBe(true)
    await cp.stop()
    expect(cp.active).toBe(false)
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000)
    await expect(cp.checkpoint()).rejects.toThrow(/not running/)
    const before = pages(file)
    fill(db)
    // SQLite's own automatic checkpoint is back: the rows reached the database file on commit.
    expect(pages(file)).toBeGreaterThan(before + 900)
  })

  it('keeps the main connection checkpointing when the worker cannot open the database', async () => {
    const { db } = freshDb()
    const sink = new MemorySink()
    const cp = WalCheckpointer.start(
      db,
      path.join(os.tmpdir(), 'no-such-dir-tandem', 'x.sqlite'),
      createLogger({ sink }),
    )!
    checkpointers.push(cp)
    expect(await cp.started).toBe(false)
    expect(cp.active).toBe(false)
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000)
    expect(sink.lines.some((l) => /checkpoints on its own connection again/.test(l))).toBe(true)
  })

  it('gives the worker the copy of better-sqlite3 this process loaded', () => {
    freshDb()
    const file = sqliteModuleFile()!
    expect(file).toMatch(/[\\/]better-sqlite3[\\/]lib[\\/]index\.js$/)
    expect(fs.existsSync(file)).toBe(true)
  })

  it('runs while the licensing module runs', async () => {
    const d = await startDaemon()
    try {
      const db = (d.core.modules.find((m) => m.name === 'licensing') as LicensingModule).database!()
      await waitFor(() => db.pragma('wal_autocheckpoint', { simple: true }) === 0)
      expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(0)
    } finally {
      await d.stop()
    }
  })
})
