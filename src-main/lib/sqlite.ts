/**
 * The one SQLite opener and migration runner: better-sqlite3, WAL with synchronous=FULL (a commit
 * is on disk before it is acknowledged), foreign keys on, the file owner-only. The licensing and
 * gateway databases open through it, each with its own numbered migrations.
 */
import fs from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { sqliteOptions } from './nativeBinding'

export type SqliteDb = Database.Database

/** One numbered, additive schema step. */
export interface Migration {
  readonly id: number
  readonly name: string
  /** Runs with foreign keys off (SQLite's 12-step table rebuild); checked with foreign_key_check before commit. */
  readonly rebuild?: boolean
  up(db: Database.Database): void
}

/** Bytes the write-ahead log file is truncated to after a checkpoint (SQLite's `journal_size_limit`). */
export const WAL_SIZE_LIMIT = 16 * 1024 * 1024

export interface OpenOptions {
  /** Stop after this migration id (tests build a database at an earlier level). */
  upTo?: number
  now?: () => number
}

/** The database file could not be opened, read or migrated; the file is left as it was. */
export class SqliteOpenError extends Error {
  constructor(
    readonly file: string,
    cause: unknown,
  ) {
    super(`${path.basename(file)} cannot be opened: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    })
    this.name = 'SqliteOpenError'
  }
}

export function openSqlite(file: string, migrations: readonly Migration[], opts: OpenOptions = {}): SqliteDb {
  let db: SqliteDb | null = null
  try {
    if (file !== ':memory:') {
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
      // The database holds provider API keys and webhook secrets: owner-only. SQLite creates the
      // -wal and -shm files with the database file's mode.
      fs.closeSync(fs.openSync(file, 'a', 0o600))
      fs.chmodSync(file, 0o600)
    }
    db = new Database(file, sqliteOptions())
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = FULL')
    db.pragma('foreign_keys = ON')
    db.pragma('busy_timeout = 5000')
    // Up to 64 MB of pages kept (SQLite's default is 2 MB): a shop's licenses and the validation
    // log's recent pages stay in memory, and a validate seldom reads a page from the file.
    db.pragma('cache_size = -65536')
    // SQLite's own checkpoint, on the commit that grows the log past 1,000 pages (4 MB): it keeps
    // the log bounded under steady writes, which a PASSIVE checkpoint from a second connection did
    // not (the log reached 300 MB in 15 s of validation-log batches; docs/benchmarks.md).
    db.pragma('wal_autocheckpoint = 1000')
    // A log grown by one large transaction (a migration, a bulk import) is cut back after its checkpoint.
    db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT}`)
    runMigrations(db, migrations, { upTo: opts.upTo, now: opts.now })
    return db
  } catch (err) {
    db?.close()
    throw new SqliteOpenError(file, err)
  }
}

function ensureMigrationTable(db: SqliteDb): void {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at INTEGER NOT NULL
  )`)
}

export function appliedMigrations(db: SqliteDb): number[] {
  ensureMigrationTable(db)
  return (db.prepare('SELECT id FROM schema_migrations ORDER BY id').all() as { id: number }[]).map((r) => r.id)
}

/**
 * Applies pending migrations in id order, each in its own transaction together with its
 * schema_migrations row, so a failure leaves the database at the previous level. A migration
 * marked `rebuild` runs with foreign keys off (the SQLite 12-step table rebuild) and must leave
 * `PRAGMA foreign_key_check` empty, or it is rolled back.
 */
export function runMigrations(
  db: SqliteDb,
  migrations: readonly Migration[],
  opts: { upTo?: number; now?: () => number } = {},
): number[] {
  const now = opts.now ?? Date.now
  const done = new Set(appliedMigrations(db))
  const ordered = [...migrations].sort((a, b) => a.id - b.id)
  const ids = new Set<number>()
  for (const m of ordered) {
    if (ids.has(m.id)) throw new Error(`duplicate migration id ${m.id}`)
    ids.add(m.id)
  }
  const applied: number[] = []
  for (const m of ordered) {
    if (done.has(m.id)) continue
    if (opts.upTo !== undefined && m.id > opts.upTo) break
    const apply = db.transaction(() => {
      m.up(db)
      if (m.rebuild) {
        const bad = db.pragma('foreign_key_check') as unknown[]
        if (bad.length > 0) throw new Error(`migration ${m.id} ${m.name} left ${bad.length} foreign key violation(s)`)
      }
      db.prepare('INSERT INTO schema_migrations (id, name, applied_at) VALUES (?, ?, ?)').run(m.id, m.name, now())
    })
    // PRAGMA foreign_keys is a no-op inside a transaction, so it is switched outside it.
    if (m.rebuild) db.pragma('foreign_keys = OFF')
    try {
      apply()
    } finally {
      if (m.rebuild) db.pragma('foreign_keys = ON')
    }
    applied.push(m.id)
  }
  return applied
}
