import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { openLicensingDb, WAL_SIZE_LIMIT, type LicensingDb } from '../../../src-main/licensing/db'
import type { LicensingModule } from '../../../src-main/licensing/module'
import { startDaemon } from '../../helpers/daemon'

/**
 * The licensing database's write-ahead log is checkpointed by SQLite itself, on the commit that
 * grows it past 1,000 pages, so it stays bounded however long the writes go on.
 */

const dirs: string[] = []
const dbs: LicensingDb[] = []

function freshDb(): { db: LicensingDb; wal: () => number } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-wal-'))
  dirs.push(dir)
  const file = path.join(dir, 'licensing.sqlite')
  const db = openLicensingDb(file)
  db.exec('CREATE TABLE filler (id INTEGER PRIMARY KEY, body BLOB NOT NULL)')
  dbs.push(db)
  return { db, wal: () => fs.statSync(`${file}-wal`).size }
}

/** `commits` commits of `rows` rows of 4 KB (a page or so each); returns the largest log seen after a commit. */
function write(db: LicensingDb, wal: () => number, commits: number, rows: number): number {
  const insert = db.prepare('INSERT INTO filler (body) VALUES (?)')
  const body = Buffer.alloc(4000, 7)
  let largest = 0
  for (let c = 0; c < commits; c++) {
    db.transaction(() => {
      for (let r = 0; r < rows; r++) insert.run(body)
    })()
    largest = Math.max(largest, wal())
  }
  return largest
}

const MB = 1024 * 1024

afterEach(() => {
  for (const db of dbs.splice(0)) if (db.open) db.close()
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true })
})

describe('the write-ahead log under write load', () => {
  it('stays under 1,000 pages and one commit, through 24 MB of commits', () => {
    const { db, wal } = freshDb()
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000)
    const largest = write(db, wal, 300, 20)
    // 1,000 frames of 4 KB plus the 20-page commit that crossed the line (and its index pages).
    expect(largest).toBeLessThan(4.5 * MB)
    expect(db.prepare('SELECT count(*) FROM filler').pluck().get()).toBe(6000)
  })

  it('grows with every commit when nothing checkpoints it (what the bound above guards against)', () => {
    const { db, wal } = freshDb()
    db.pragma('wal_autocheckpoint = 0')
    expect(write(db, wal, 300, 20)).toBeGreaterThan(20 * MB)
  })

  it('is cut back to its size limit after one large transaction', () => {
    const { db, wal } = freshDb()
    expect(db.pragma('journal_size_limit', { simple: true })).toBe(WAL_SIZE_LIMIT)
    expect(write(db, wal, 1, 8000)).toBeGreaterThan(30 * MB)
    // The next commits start the checkpointed log over, and the file is truncated then.
    write(db, wal, 2, 1)
    expect(wal()).toBeLessThanOrEqual(WAL_SIZE_LIMIT)
  })

  it('keeps SQLite checkpointing in the running daemon', async () => {
    const d = await startDaemon()
    try {
      const db = (d.core.modules.find((m) => m.name === 'licensing') as LicensingModule).database!()
      expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000)
    } finally {
      await d.stop()
    }
  })
})
