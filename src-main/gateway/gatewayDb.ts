import path from 'node:path'
import { openSqlite, type Migration, type SqliteDb } from '../lib/sqlite'

/**
 * The gateway's own SQLite file (DATA_DIR/gateway.db): named consumer keys, their hourly usage and
 * a license key's usage per access period and model.
 * Kept apart from the licensing database so a busy gateway never contends with a settlement's
 * write lock; opened with the same migration runner (its own numbering, from 1).
 */
export type GatewayDb = SqliteDb

export const GATEWAY_DB_FILE = 'gateway.db'

export const GATEWAY_MIGRATIONS: readonly Migration[] = [
  {
    id: 1,
    name: 'consumer keys and hourly usage',
    up(db) {
      db.exec(`
        CREATE TABLE consumer_keys (
          id TEXT PRIMARY KEY,
          name TEXT NOT NULL,
          prefix TEXT NOT NULL UNIQUE,
          secret_sha256 TEXT NOT NULL,
          created_at INTEGER NOT NULL,
          expires_at INTEGER,
          disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
          models TEXT,
          requests_per_minute INTEGER CHECK (requests_per_minute IS NULL OR requests_per_minute > 0),
          max_concurrent INTEGER CHECK (max_concurrent IS NULL OR max_concurrent > 0),
          last_used_at INTEGER
        );
        CREATE TABLE key_usage_hourly (
          key_id TEXT NOT NULL REFERENCES consumer_keys(id) ON DELETE CASCADE,
          hour INTEGER NOT NULL,
          requests INTEGER NOT NULL DEFAULT 0,
          errors INTEGER NOT NULL DEFAULT 0,
          prompt_tokens INTEGER NOT NULL DEFAULT 0,
          completion_tokens INTEGER NOT NULL DEFAULT 0,
          estimated_completion_tokens INTEGER NOT NULL DEFAULT 0,
          streams INTEGER NOT NULL DEFAULT 0,
          ttft_ms_sum REAL NOT NULL DEFAULT 0,
          stream_tokens INTEGER NOT NULL DEFAULT 0,
          stream_seconds REAL NOT NULL DEFAULT 0,
          audio_seconds REAL NOT NULL DEFAULT 0,
          speech_characters INTEGER NOT NULL DEFAULT 0,
          PRIMARY KEY (key_id, hour)
        ) WITHOUT ROWID;
        CREATE INDEX key_usage_hour ON key_usage_hourly(hour);
      `)
    },
  },
  {
    id: 2,
    name: 'consumer keys bound to a license',
    up(db) {
      db.exec(`
        ALTER TABLE consumer_keys ADD COLUMN license_id TEXT;
        CREATE UNIQUE INDEX consumer_keys_license ON consumer_keys(license_id) WHERE license_id IS NOT NULL;
      `)
    },
  },
  {
    id: 3,
    name: 'license keys usage per period and model',
    up(db) {
      db.exec(`
        CREATE TABLE key_period_usage (
          key_id TEXT NOT NULL REFERENCES consumer_keys(id) ON DELETE CASCADE,
          period_start INTEGER NOT NULL,
          model TEXT NOT NULL,
          requests INTEGER NOT NULL DEFAULT 0,
          prompt_tokens INTEGER NOT NULL DEFAULT 0,
          completion_tokens INTEGER NOT NULL DEFAULT 0,
          audio_seconds REAL NOT NULL DEFAULT 0,
          PRIMARY KEY (key_id, period_start, model)
        ) WITHOUT ROWID;
      `)
    },
  },
]

export function openGatewayDb(dataDir: string, now?: () => number): GatewayDb {
  return openSqlite(path.join(dataDir, GATEWAY_DB_FILE), GATEWAY_MIGRATIONS, { now })
}
