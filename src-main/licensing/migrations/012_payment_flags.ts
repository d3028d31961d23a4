import type { Migration } from './index'

const FLAGS = "'underpaid', 'overpaid', 'currency_mismatch', 'store_mismatch', 'paid_late', 'amount_unverified'"

/**
 * Two more admin flags on invoices: `paid_late` (a payment after expiry, settled) and
 * `amount_unverified` (settled on the provider's status alone). SQLite cannot change a column's
 * CHECK, so the column is swapped for one with the wider list: its values are copied, the old
 * column dropped (its partial index first) and the new one renamed into place. Idempotent: a
 * table whose definition already names the new flags is left alone.
 */
export const m012PaymentFlags: Migration = {
  id: 12,
  name: 'payment_flags',
  up(db) {
    const row = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'invoices'").get() as
      { sql: string } | undefined
    if (row === undefined || row.sql.includes('amount_unverified')) return
    db.exec(`
      DROP INDEX IF EXISTS invoices_flagged;
      ALTER TABLE invoices ADD COLUMN payment_flag_widened TEXT
        CHECK (payment_flag_widened IS NULL OR payment_flag_widened IN (${FLAGS}));
      UPDATE invoices SET payment_flag_widened = payment_flag WHERE payment_flag IS NOT NULL;
      ALTER TABLE invoices DROP COLUMN payment_flag;
      ALTER TABLE invoices RENAME COLUMN payment_flag_widened TO payment_flag;
      CREATE INDEX invoices_flagged ON invoices (flagged_at) WHERE payment_flag IS NOT NULL;
    `)
  },
}
