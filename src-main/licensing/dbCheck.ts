/**
 * Is the licensing database file what it should be, before anything writes to it?
 *
 * A damaged or emptied file must never be taken for a new install: SQLite would happily create an
 * empty database over a zero-length file and reset the write-ahead log beside it, losing every
 * license the log still held. So before the database is opened for writing (and migrated), the
 * file is inspected: missing with no -wal/-shm beside it is a new install; anything else is an
 * existing database and is opened read-only (a read-only connection never checkpoints, so neither
 * the file nor its WAL is rewritten), checked with `PRAGMA integrity_check` (small files) or
 * `quick_check`, and must hold the licensing schema. A file that fails is left exactly as it was
 * and licensing runs degraded (degraded.ts) with the reason and the newest backup to restore.
 */
import fs from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import type { Logger } from '../lib/logger'
import { sqliteOptions } from '../lib/nativeBinding'
import { openLicensingDb } from './db'

/**
 * The start check is `quick_check` (every page and record, O(N)), and up to this size (database
 * plus WAL) also the full `integrity_check`, which cross-checks every index against its table,
 * O(N log N). Measured at about 50 ms per MiB for integrity_check against about 10 ms per MiB for
 * quick_check on a table with two indexes, so 16 MiB keeps the start check under a second. A
 * shop's database is a few MiB; the validation log is what grows it past this.
 */
export const INTEGRITY_CHECK_MAX_BYTES = 16 * 1024 * 1024

/** The lines of a failed check kept in the reason (the log gets more). */
const REASON_LINES = 3
const LOG_LINES = 20

export type CheckKind = 'integrity_check' | 'quick_check'

/** The licensing database is damaged, emptied or not a licensing database; it was not opened for writing. */
export class LicensingDbDamaged extends Error {
  constructor(
    readonly file: string,
    /** What is wrong, in words, naming the file by its base name only. */
    readonly problem: string,
    /** The newest backup in the backup folder (full path), or null when there is none. */
    readonly backup: string | null,
    /** The checker's full answer, for the log. */
    readonly detail: string = problem,
  ) {
    super(`${path.basename(file)} ${problem}`)
    this.name = 'LicensingDbDamaged'
  }
}

export type Preflight = { kind: 'new' } | { kind: 'existing'; checks: CheckKind[]; bytes: number; ms: number }

function sizeOf(file: string): number | null {
  const st = fs.statSync(file, { throwIfNoEntry: false })
  return st ? st.size : null
}

/** `[short reason, longer detail]` of a check's answer, or null when it says ok. */
function checkAnswer(rows: unknown[], kind: CheckKind): [string, string] | null {
  const lines = (rows as Record<string, unknown>[])
    .flatMap((r) => String(Object.values(r)[0] ?? '').split('\n'))
    .filter((l) => l !== '' && !l.startsWith('*** in database'))
  if (lines.length === 1 && lines[0] === 'ok') return null
  const pick = (n: number): string =>
    lines.slice(0, n).join('; ') + (lines.length > n ? ` (+${lines.length - n} more)` : '')
  return [`fails ${kind}: ${pick(REASON_LINES)}`, `fails ${kind}: ${pick(LOG_LINES)}`]
}

/** A read-only connection of its own: it sees what is on disk (no cache shared with the writer) and never checkpoints. */
function openReadOnly(file: string): Database.Database {
  return new Database(file, { ...sqliteOptions(), readonly: true, fileMustExist: true })
}

/**
 * Runs the checks in order on a fresh read-only connection to `file`, stopping at the first that
 * fails. Returns null when the file is sound, else `[reason, detail]` with the check's answer or
 * SQLite's own error ("file is not a database", "database disk image is malformed").
 */
export function checkFile(file: string, kinds: readonly CheckKind[] = ['quick_check']): [string, string] | null {
  let db: Database.Database | null = null
  let kind: CheckKind = kinds[0] ?? 'quick_check'
  try {
    db = openReadOnly(file)
    for (kind of kinds) {
      const failed = checkAnswer(db.pragma(kind) as unknown[], kind)
      if (failed) return failed
    }
    return null
  } catch (err) {
    const msg = `fails ${kind}: ${err instanceof Error ? err.message : String(err)}`
    return [msg, msg]
  } finally {
    db?.close()
  }
}

/** The tables a database migrated up to `level` has (from a scratch copy in memory). */
function tablesAtLevel(level: number): string[] {
  const ref = openLicensingDb(':memory:', { upTo: level })
  try {
    return tableNames(ref)
  } finally {
    ref.close()
  }
}

function tableNames(db: Database.Database): string[] {
  return (
    db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all() as {
      name: string
    }[]
  ).map((r) => r.name)
}

/** The schema problem of an existing licensing database (read-only connection), or null. */
function schemaProblem(db: Database.Database): string | null {
  const tables = tableNames(db)
  if (tables.length === 0) return 'holds no tables: an empty database where the licensing database was expected'
  if (!tables.includes('schema_migrations'))
    return 'has no schema_migrations table: it is not a Tandem licensing database, or its schema is lost'
  const ids = (db.prepare('SELECT id FROM schema_migrations ORDER BY id').all() as { id: number }[]).map((r) => r.id)
  if (ids.length === 0) return 'records no applied migrations: its schema is lost'
  const missing = tablesAtLevel(Math.max(...ids)).filter((t) => !tables.includes(t))
  if (missing.length > 0) return `lacks the table(s) ${missing.join(', ')} of its schema level ${Math.max(...ids)}`
  return null
}

/** What is wrong with the files on disk before anything opens them (missing, empty), or null to go on and check. */
function filesProblem(file: string, size: number | null, wal: number | null): string | null {
  const name = path.basename(file)
  if (size === null) {
    const beside = wal !== null ? `${name}-wal (${wal} bytes)` : `${name}-shm`
    return `is missing while ${beside} is beside it: the database file was lost`
  }
  if (!fs.statSync(file).isFile()) return 'is not a regular file'
  if (size > 0) return null
  return wal !== null && wal > 0
    ? `is empty (0 bytes) while its write-ahead log ${name}-wal (${wal} bytes) is beside it: the database file was truncated`
    : 'is empty (0 bytes) where the licensing database was expected: the database file was truncated'
}

/** The integrity checks, then the schema, on read-only connections: `[reason, detail]` of the first failure, or null. */
function contentProblem(file: string, kinds: readonly CheckKind[]): [string, string] | null {
  const failed = checkFile(file, kinds)
  if (failed) return failed
  let db: Database.Database | null = null
  try {
    db = openReadOnly(file)
    const problem = schemaProblem(db)
    return problem ? [problem, problem] : null
  } catch (err) {
    const problem = `cannot be read: ${err instanceof Error ? err.message : String(err)}`
    return [problem, problem]
  } finally {
    db?.close()
  }
}

/**
 * Decides, before the licensing database is opened for writing, whether it is a new install
 * (no file, no -wal, no -shm: the caller creates it) or an existing database that passed its
 * integrity and schema checks (the caller opens and migrates it). Anything else throws
 * LicensingDbDamaged and leaves the file and its WAL as they were.
 */
export function preflightLicensingDb(
  file: string,
  opts: { newestBackup: () => string | null; logger: Logger },
): Preflight {
  const { logger } = opts
  const name = path.basename(file)
  const size = sizeOf(file)
  const wal = sizeOf(`${file}-wal`)
  const shm = sizeOf(`${file}-shm`)
  const damaged = ([problem, detail]: [string, string]): LicensingDbDamaged => {
    const backup = opts.newestBackup()
    logger.error('licensing database failed its start check: not opened for writing, licensing is degraded', {
      file: name,
      problem: detail,
      newestBackup: backup ? path.basename(backup) : null,
    })
    return new LicensingDbDamaged(file, problem, backup, detail)
  }
  if (size === null && wal === null && shm === null) {
    logger.info('no licensing database yet: a new one is created', { file: name })
    return { kind: 'new' }
  }
  const onDisk = filesProblem(file, size, wal)
  if (onDisk) throw damaged([onDisk, onDisk])
  const bytes = (size ?? 0) + (wal ?? 0)
  const kinds: CheckKind[] = bytes <= INTEGRITY_CHECK_MAX_BYTES ? ['quick_check', 'integrity_check'] : ['quick_check']
  const t0 = performance.now()
  const failed = contentProblem(file, kinds)
  if (failed) {
    // The read-only connections create -wal and -shm when they are missing: those are removed again.
    if (shm === null) fs.rmSync(`${file}-shm`, { force: true })
    if (wal === null && sizeOf(`${file}-wal`) === 0) fs.rmSync(`${file}-wal`, { force: true })
    throw damaged(failed)
  }
  const ms = Math.round(performance.now() - t0)
  logger.info('licensing database passed its start check', { file: name, checks: kinds, bytes, ms })
  return { kind: 'existing', checks: kinds, bytes, ms }
}

/**
 * Closes the writer of a database found damaged while running without SQLite's checkpoint on
 * close: a read-only connection holds a read lock meanwhile, so the closing writer cannot take the
 * exclusive lock it checkpoints under, and the WAL is left beside the file as it is (the reader,
 * being read-only, never checkpoints either).
 */
export function closeWithoutCheckpoint(file: string, close: () => void): void {
  let reader: Database.Database | null = null
  try {
    reader = openReadOnly(file)
    reader.exec('BEGIN')
    reader.prepare('SELECT count(*) FROM sqlite_master').get()
  } catch {
    // No read lock to hold (page 1 unreadable): the writer closes as usual.
  }
  try {
    close()
  } finally {
    try {
      if (reader?.inTransaction) reader.exec('COMMIT')
    } finally {
      reader?.close()
    }
  }
}
