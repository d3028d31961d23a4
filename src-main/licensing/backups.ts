/**
 * Rolling online backups of the licensing database, through SQLite's backup API (a consistent
 * copy while the shop keeps running), in DATA_DIR/backups: the folder 0700 and the files 0600,
 * since the database holds provider keys and webhook secrets. Each backup is written under a temp
 * name, checked with quick_check, synced and then renamed, so a file with a backup's name is
 * always whole. Names carry a sortable UTC timestamp; the newest `keep` are kept.
 *
 * Restoring: stop Tandem, copy a backup over licensing.sqlite, remove licensing.sqlite-wal and
 * licensing.sqlite-shm, start Tandem.
 */
import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import type { LicensingDb } from './db'
import { checkFile } from './dbCheck'

/** `licensing-20261127T214500.123Z.sqlite`: UTC, fixed width, so names sort by time. */
const BACKUP_NAME = /^licensing-\d{8}T\d{6}\.\d{3}Z\.sqlite$/
/** Temp files of a backup in progress (and SQLite's side files of them). */
const TEMP_NAME = /^\.licensing-.*\.tmp(-journal|-wal|-shm)?$/

export function backupName(ms: number): string {
  const iso = new Date(ms).toISOString() // 2026-11-27T21:45:00.123Z
  return `licensing-${iso.replace(/[-:]/g, '')}.sqlite`
}

/** The backups in `dir`, oldest first (names only); none when the folder does not exist. */
export function listBackups(dir: string): string[] {
  let names: string[]
  try {
    names = fs.readdirSync(dir)
  } catch {
    return []
  }
  return names.filter((n) => BACKUP_NAME.test(n)).sort()
}

/** The newest backup's full path, or null. */
export function newestBackup(dir: string): string | null {
  const names = listBackups(dir)
  return names.length > 0 ? path.join(dir, names[names.length - 1]!) : null
}

function removeSideFiles(file: string): void {
  for (const f of [file, `${file}-journal`, `${file}-wal`, `${file}-shm`]) fs.rmSync(f, { force: true })
}

function fsyncPath(p: string): void {
  try {
    const fd = fs.openSync(p, 'r')
    try {
      fs.fsyncSync(fd)
    } finally {
      fs.closeSync(fd)
    }
  } catch {
    // Directory fsync is best effort (not supported on every filesystem).
  }
}

export interface BackupOptions {
  readonly db: LicensingDb
  readonly dir: string
  /** How many backups to keep; 0 = backups off. */
  readonly keep: number
  readonly clock: Clock
  readonly logger: Logger
}

export class LicensingBackups {
  constructor(private readonly o: BackupOptions) {}

  get enabled(): boolean {
    return this.o.keep > 0
  }

  /** The backup folder, created 0700 (and set back to 0700 if it was looser); stale temp files removed. */
  private prepareDir(): void {
    fs.mkdirSync(this.o.dir, { recursive: true, mode: 0o700 })
    fs.chmodSync(this.o.dir, 0o700)
    for (const n of fs.readdirSync(this.o.dir)) {
      if (!TEMP_NAME.test(n)) continue
      fs.rmSync(path.join(this.o.dir, n), { force: true })
      this.o.logger.info('removed the temp file of an interrupted licensing backup', { file: n })
    }
  }

  /**
   * Writes a backup and rotates; returns its full path, or null when backups are off or the
   * backup failed (logged; the database itself is untouched either way).
   */
  async take(): Promise<string | null> {
    if (!this.enabled) return null
    const name = backupName(this.o.clock.now())
    const target = path.join(this.o.dir, name)
    const tmp = path.join(this.o.dir, `.${name}.${randomBytes(6).toString('hex')}.tmp`)
    try {
      this.prepareDir()
      // Created 0600 before SQLite writes into it, so the secrets are never readable by others.
      fs.closeSync(fs.openSync(tmp, 'wx', 0o600))
      await this.o.db.backup(tmp)
      fs.chmodSync(tmp, 0o600)
      const failed = checkFile(tmp)
      // The check's read-only connection may leave -wal/-shm beside the temp file.
      for (const f of [`${tmp}-wal`, `${tmp}-shm`, `${tmp}-journal`]) fs.rmSync(f, { force: true })
      if (failed) throw new Error(`the copy ${failed[0]}`)
      fsyncPath(tmp)
      fs.renameSync(tmp, target)
      fsyncPath(this.o.dir)
    } catch (err) {
      removeSideFiles(tmp)
      this.o.logger.error('licensing backup failed; the database itself is unchanged', { file: name, error: err })
      return null
    }
    const removed = this.rotate()
    this.o.logger.info('licensing backup written', {
      file: name,
      bytes: fs.statSync(target).size,
      kept: listBackups(this.o.dir).length,
      removed,
    })
    return target
  }

  /** Removes all but the newest `keep` backups; returns the names removed. */
  rotate(): string[] {
    const names = listBackups(this.o.dir)
    const old = names.slice(0, Math.max(0, names.length - this.o.keep))
    for (const n of old) fs.rmSync(path.join(this.o.dir, n), { force: true })
    return old
  }
}
