import type { Migration } from './index'

/**
 * A buyer's bought top-up (issue 45): invoices of kind 'top_up', each aimed at an existing
 * license by its `access_top_up_orders` row (the tokens bought, fixed when the invoice opened).
 * SQLite cannot change a column's CHECK, so `kind` is swapped for one with the wider list, as
 * migration 012 did for the payment flag. Idempotent: a table that already names 'top_up' keeps
 * its column.
 */
export const m016TopUpInvoices: Migration = {
  id: 16,
  name: 'top_up_invoices',
  up(db) {
    const row = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'invoices'").get() as
      { sql: string } | undefined
    if (row !== undefined && !row.sql.includes("'top_up'")) {
      db.exec(`
        ALTER TABLE invoices ADD COLUMN kind_widened TEXT NOT NULL DEFAULT 'purchase'
          CHECK (kind_widened IN ('purchase', 'redeem', 'renewal', 'upgrade', 'top_up'));
        UPDATE invoices SET kind_widened = kind;
        ALTER TABLE invoices DROP COLUMN kind;
        ALTER TABLE invoices RENAME COLUMN kind_widened TO kind;
      `)
    }
    db.exec(`
      CREATE TABLE IF NOT EXISTS access_top_up_orders (
        invoice_id TEXT PRIMARY KEY REFERENCES invoices(id),
        license_id TEXT NOT NULL REFERENCES licenses(id),
        tokens INTEGER NOT NULL CHECK (tokens > 0),
        created_at INTEGER NOT NULL
      );
      CREATE INDEX IF NOT EXISTS access_top_up_orders_license ON access_top_up_orders (license_id, created_at);
    `)
  },
}
