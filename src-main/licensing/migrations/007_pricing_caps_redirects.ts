import type { Migration } from './index'

/**
 * Discount reservations that lapse (`reserved_at`, the time a checkout took the use) and late
 * payments that went past a code's cap (`over_cap`, shown to the admin); a product's return URL
 * prefix, which `redirect_url` must start with unless it is Tandem's own or allow-listed.
 */
export const m007PricingCapsRedirects: Migration = {
  id: 7,
  name: 'pricing_caps_redirects',
  up(db) {
    db.exec(`
      ALTER TABLE discount_redemptions ADD COLUMN reserved_at INTEGER;
      UPDATE discount_redemptions SET reserved_at = redeemed_at;
      ALTER TABLE discount_redemptions ADD COLUMN over_cap INTEGER NOT NULL DEFAULT 0 CHECK (over_cap IN (0, 1));
      ALTER TABLE products ADD COLUMN return_url_prefix TEXT;
    `)
  },
}
