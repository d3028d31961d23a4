import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openLicensingDb } from '../../../src-main/licensing/db'

describe('licensing database durability', () => {
  let dir: string
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-lic-db-'))
  })
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

  it('runs WAL with synchronous=FULL, so an acknowledged settlement survives power loss', () => {
    const db = openLicensingDb(path.join(dir, 'licensing.sqlite'))
    try {
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal')
      // 2 = FULL (0 OFF, 1 NORMAL, 3 EXTRA)
      expect(db.pragma('synchronous', { simple: true })).toBe(2)
      expect(db.pragma('foreign_keys', { simple: true })).toBe(1)
    } finally {
      db.close()
    }
  })

  it('a file that is not a database fails to open with a clear error and is left untouched', () => {
    const file = path.join(dir, 'licensing.sqlite')
    fs.writeFileSync(file, 'garbage '.repeat(1000))
    expect(() => openLicensingDb(file)).toThrow(/not a database/)
    expect(fs.readFileSync(file, 'utf8')).toBe('garbage '.repeat(1000))
  })
})
