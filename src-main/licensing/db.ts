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
import {
  openSqlite,
  runMigrations as runSqliteMigrations,
  SqliteOpenError,
  type Migration,
  type SqliteDb,
} from '../lib/sqlite'
import { MIGRATIONS } from './migrations'

export type LicensingDb = SqliteDb
export { appliedMigrations, WAL_SIZE_LIMIT } from '../lib/sqlite'
export type { Migration }

export interface OpenOptions {
  /** Stop after this migration id (tests build a database at an earlier level). */
  upTo?: number
  migrations?: readonly Migration[]
  now?: () => number
}

/** The licensing database file could not be opened, read or migrated; the file is left as it was. */
export class LicensingDbError extends SqliteOpenError {
  constructor(file: string, cause: unknown) {
    super(file, cause)
    this.name = 'LicensingDbError'
  }
}

export function openLicensingDb(file: string, opts: OpenOptions = {}): LicensingDb {
  try {
    return openSqlite(file, opts.migrations ?? MIGRATIONS, opts)
  } catch (err) {
    throw err instanceof SqliteOpenError ? new LicensingDbError(file, err.cause) : err
  }
}

/** The licensing migrations (or `migrations`) applied in order: lib/sqlite.ts runMigrations. */
export function runMigrations(
  db: LicensingDb,
  migrations: readonly Migration[] = MIGRATIONS,
  opts: { upTo?: number; now?: () => number } = {},
): number[] {
  return runSqliteMigrations(db, migrations, opts)
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
