import type { Migration } from './index'

/**
 * Tokens added to an access license's current period (issue 45): an operator's grant or a bought
 * top-up. A top-up counts in the period its `created_at` falls in; `invoice_id` is unique so a
 * settlement replayed adds it once.
 */
export const m015AccessTopUps: Migration = {
  id: 15,
  name: 'access_top_ups',
  up(db) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS access_top_ups (
        id TEXT PRIMARY KEY,
        license_id TEXT NOT NULL REFERENCES licenses(id),
        tokens INTEGER NOT NULL CHECK (tokens > 0),
        source TEXT NOT NULL CHECK (source IN ('admin', 'paid')),
        invoice_id TEXT UNIQUE,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX IF NOT EXISTS access_top_ups_license ON access_top_ups (license_id, created_at);
    `)
  },
}
