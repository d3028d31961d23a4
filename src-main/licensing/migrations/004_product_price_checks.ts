import type { Migration } from './index'

const MARKER = 'products_price_currency_valid'

/**
 * Rebuilds `products` to add the price CHECKs that ALTER TABLE cannot add (SQLite's 12-step
 * rebuild: new table, copy, drop, rename, re-create indexes; run with foreign keys off and
 * verified with foreign_key_check by the runner). Idempotent: a table that already carries the
 * named constraint is left alone. Rows are normalised on the way: an unknown currency becomes
 * SAT, and a SAT product's price_sats and price_value agree (price_value wins unless it was never
 * set).
 */
export const m004ProductPriceChecks: Migration = {
  id: 4,
  name: 'product_price_checks',
  rebuild: true,
  up(db) {
    const row = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'products'").get() as
      { sql: string } | undefined
    if (row === undefined || row.sql.includes(MARKER)) return
    db.exec(`
      DROP TABLE IF EXISTS products_rebuild;
      CREATE TABLE products_rebuild (
        id TEXT PRIMARY KEY,
        slug TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        price_sats INTEGER NOT NULL DEFAULT 0 CHECK (price_sats >= 0),
        entitlements_catalog TEXT NOT NULL DEFAULT '[]',
        active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        price_currency TEXT NOT NULL DEFAULT 'SAT',
        price_value INTEGER NOT NULL DEFAULT 0,
        CONSTRAINT ${MARKER} CHECK (price_currency IN ('SAT', 'USD', 'EUR', 'BTC')),
        CONSTRAINT products_price_value_nonnegative CHECK (price_value >= 0),
        CONSTRAINT products_sat_price_in_sync CHECK (price_currency <> 'SAT' OR price_sats = price_value)
      );
      INSERT INTO products_rebuild (id, slug, name, description, price_sats, entitlements_catalog, active,
                                    created_at, updated_at, price_currency, price_value)
      SELECT id, slug, name, description,
             CASE WHEN cur = 'SAT' THEN sat_value ELSE price_sats END,
             entitlements_catalog, active, created_at, updated_at, cur,
             CASE WHEN cur = 'SAT' THEN sat_value ELSE max(price_value, 0) END
      FROM (
        SELECT p.*,
               CASE WHEN upper(trim(price_currency)) IN ('SAT', 'USD', 'EUR', 'BTC') THEN upper(trim(price_currency))
                    ELSE 'SAT' END AS cur,
               CASE WHEN price_value > 0 THEN price_value ELSE price_sats END AS sat_value
        FROM products p
      );
      DROP TABLE products;
      ALTER TABLE products_rebuild RENAME TO products;
    `)
  },
}
