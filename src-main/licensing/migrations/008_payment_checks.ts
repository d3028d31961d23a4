import type { Migration } from './index'

/**
 * Payments that cannot be faked or stranded: what the provider said about an invoice's amount
 * when it disagreed with ours (the admin's flag), how often in a row the provider answered "not
 * found", a provider kept read-only while its last invoices settle after a disconnect, and the
 * single-use states of BTCPay's API-key authorization flow.
 */
export const m008PaymentChecks: Migration = {
  id: 8,
  name: 'payment_checks',
  up(db) {
    db.exec(`
      ALTER TABLE invoices ADD COLUMN payment_flag TEXT
        CHECK (payment_flag IS NULL OR payment_flag IN ('underpaid', 'overpaid', 'currency_mismatch', 'store_mismatch'));
      ALTER TABLE invoices ADD COLUMN payment_flag_detail TEXT;
      ALTER TABLE invoices ADD COLUMN flagged_at INTEGER;
      ALTER TABLE invoices ADD COLUMN not_found_count INTEGER NOT NULL DEFAULT 0;
      CREATE INDEX invoices_flagged ON invoices (flagged_at) WHERE payment_flag IS NOT NULL;
      CREATE INDEX invoices_open_by_provider ON invoices (provider, status, created_at);

      ALTER TABLE provider_a_config ADD COLUMN settling_since INTEGER;
      ALTER TABLE provider_b_config ADD COLUMN settling_since INTEGER;

      CREATE TABLE btcpay_authorizations (
        state_hash TEXT PRIMARY KEY,
        base_url TEXT NOT NULL,
        store_id TEXT,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      );
    `)
  },
}
