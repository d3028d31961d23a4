import type { Migration } from './index'

/**
 * The validation log (every validate, activate, heartbeat and deactivate call, with its result
 * and caller), its per-day roll-up for the Overview chart, and who called for each audit entry.
 */
export const m009ValidationLog: Migration = {
  id: 9,
  name: 'validation_log',
  up(db) {
    db.exec(`
      CREATE TABLE validation_log (
        id INTEGER PRIMARY KEY,
        at INTEGER NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('validate', 'activate', 'heartbeat', 'deactivate')),
        -- The license the key resolved to; NULL when it resolved to none (then key_hash says which key).
        license_id TEXT,
        key_hash TEXT,
        ok INTEGER NOT NULL CHECK (ok IN (0, 1)),
        result TEXT NOT NULL,
        fingerprint_hash TEXT,
        client_ip TEXT,
        user_agent TEXT
      );
      CREATE INDEX validation_log_license ON validation_log (license_id, id);

      CREATE TABLE validation_daily (
        day TEXT NOT NULL,
        kind TEXT NOT NULL,
        result TEXT NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (day, kind, result)
      ) WITHOUT ROWID;

      ALTER TABLE audit_log ADD COLUMN via TEXT CHECK (via IN ('http', 'ipc'));
      ALTER TABLE audit_log ADD COLUMN client_ip TEXT;
      ALTER TABLE audit_log ADD COLUMN user_agent TEXT;
    `)
  },
}
