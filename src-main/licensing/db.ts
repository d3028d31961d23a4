/**
 * The licensing database: SQLite through better-sqlite3, WAL with synchronous=FULL (a commit is
 * on disk before it is acknowledged: a settlement confirmed to a payment provider must survive a
 * power cut), foreign keys on.
 *
 * Conventions of the schema (migrations/): ids are UUID text, except audit_log and
 * subscription_invoices (integer). Every timestamp is INTEGER milliseconds since the epoch from
 * the injected clock (`*_at`). Money is INTEGER in the smallest unit of its currency. Booleans are
 * INTEGER 0/1. JSON lists (entitlements, events) are TEXT holding a JSON array.
 */
import fs from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { sqliteOptions } from '../lib/nativeBinding'
import { MIGRATIONS, type Migration } from './migrations'

export type LicensingDb = Database.Database

/** Bytes the write-ahead log file is truncated to after a checkpoint (SQLite's `journal_size_limit`). */
export const WAL_SIZE_LIMIT = 16 * 1024 * 1024
export type { Migration }

export interface OpenOptions {
  /** Stop after this migration id (tests build a database at an earlier level). */
  upTo?: number
  migrations?: readonly Migration[]
  now?: () => number
}

/** The database file could not be opened, read or migrated; the file is left as it was. */
export class LicensingDbError extends Error {
  constructor(
    readonly file: string,
    cause: unknown,
  ) {
    super(`${path.basename(file)} cannot be opened: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    })
    this.name = 'LicensingDbError'
  }
}

export function openLicensingDb(file: string, opts: OpenOptions = {}): LicensingDb {
  let db: LicensingDb | null = null
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
    runMigrations(db, opts.migrations ?? MIGRATIONS, { upTo: opts.upTo, now: opts.now })
    return db
  } catch (err) {
    db?.close()
    throw new LicensingDbError(file, err)
  }
}

function ensureMigrationTable(db: LicensingDb): void {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at INTEGER NOT NULL
  )`)
}

export function appliedMigrations(db: LicensingDb): number[] {
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
  db: LicensingDb,
  migrations: readonly Migration[] = MIGRATIONS,
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

export function checkDatabase(db: LicensingDb): { foreignKeyViolations: number; integrity: string } {
  const fk = db.pragma('foreign_key_check') as unknown[]
  const integrity = db.pragma('integrity_check', { simple: true }) as string
  return { foreignKeyViolations: fk.length, integrity }
}

/** Runs `fn` in an IMMEDIATE transaction (takes the write lock up front, so concurrent writers queue). */
export function immediate<T>(db: LicensingDb, fn: () => T): T {
  return db.transaction(fn).immediate()
}

/**
 * An ORDER BY clause for a sort key the contract's enum admitted, mapped to SQL here (input is
 * never spliced into SQL); the tie-break keeps paging stable.
 */
export function orderBy<K extends string>(
  columns: Record<K, string>,
  sort: K,
  order: 'asc' | 'desc',
  tieBreak: string,
): string {
  const dir = order === 'asc' ? 'ASC' : 'DESC'
  return `ORDER BY ${columns[sort]} ${dir}, ${tieBreak} ${dir}`
}

/** A LIKE pattern (used with ESCAPE '\\') matching `text` anywhere, its %, _ and backslashes taken literally. */
export function likeContains(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}

/**
 * A condition matching `text` anywhere in any of `columns` (fixed SQL names, never input), with its
 * bound arguments; null when there is nothing to search for. The one search every admin list uses.
 */
export function matchAny(columns: readonly string[], text: string | undefined): { sql: string; args: string[] } | null {
  if (!text) return null
  return {
    sql: `(${columns.map((c) => `${c} LIKE ? ESCAPE '\\'`).join(' OR ')})`,
    args: Array<string>(columns.length).fill(likeContains(text)),
  }
}

/** A value bound to a `?` placeholder. */
export type SqlArg = string | number

/** One condition of a WHERE clause: fixed SQL with `?` placeholders, and the values bound to them. */
export interface Condition {
  readonly sql: string
  readonly args: readonly SqlArg[]
}

/** `column = ?` bound to `value`; nothing when the value is absent. `column` is a fixed SQL name, never input. */
export function equals(column: string, value: SqlArg | undefined): Condition | null {
  return value === undefined ? null : { sql: `${column} = ?`, args: [value] }
}

/**
 * A WHERE clause joining the conditions present with AND, and their bound arguments in order;
 * '' when none is. The one way a list's filter becomes SQL: input only ever reaches `args`.
 */
export function whereAll(conds: readonly (Condition | null | undefined | false)[]): { where: string; args: SqlArg[] } {
  const present = conds.filter((c): c is Condition => !!c)
  if (present.length === 0) return { where: '', args: [] }
  return { where: `WHERE ${present.map((c) => c.sql).join(' AND ')}`, args: present.flatMap((c) => c.args) }
}

/** `matchAny` as a whole WHERE clause; '' for no search. */
export function searchAny(columns: readonly string[], text: string | undefined): { where: string; args: SqlArg[] } {
  return whereAll([matchAny(columns, text)])
}
