import type { Migration } from './index'

/**
 * Multi-currency pricing (spec 001 §2.1–2.4): listed currency and value on products, currency
 * overrides on policies, the four fiat audit columns on invoices, discount_currency on codes.
 * Existing products are backfilled from the legacy price_sats.
 */
export const m002MultiCurrency: Migration = {
  id: 2,
  name: 'multi_currency',
  up(db) {
    db.exec(`
      ALTER TABLE products ADD COLUMN price_currency TEXT NOT NULL DEFAULT 'SAT';
      ALTER TABLE products ADD COLUMN price_value INTEGER NOT NULL DEFAULT 0;
      UPDATE products SET price_value = price_sats WHERE price_currency = 'SAT';

      ALTER TABLE policies ADD COLUMN price_currency_override TEXT;
      ALTER TABLE policies ADD COLUMN price_value_override INTEGER;
      UPDATE policies SET price_value_override = price_sats_override WHERE price_sats_override IS NOT NULL;

      ALTER TABLE invoices ADD COLUMN listed_currency TEXT;
      ALTER TABLE invoices ADD COLUMN listed_value INTEGER;
      ALTER TABLE invoices ADD COLUMN exchange_rate_centibps INTEGER;
      ALTER TABLE invoices ADD COLUMN exchange_rate_source TEXT;
      ALTER TABLE invoices ADD COLUMN discount_value INTEGER;

      ALTER TABLE discount_codes ADD COLUMN discount_currency TEXT NOT NULL DEFAULT 'SAT';
    `)
  },
}
