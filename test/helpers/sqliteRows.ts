import Database from 'better-sqlite3'

/** How many rows `table` holds in the database file, read on its own read-only connection. */
export function rowCount(file: string, table: string): number {
  const db = new Database(file, { readonly: true })
  try {
    return (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n
  } finally {
    db.close()
  }
}
