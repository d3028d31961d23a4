import type { Migration } from './index'

/**
 * Discount redemptions become reservations: a code is reserved `pending` when an invoice is
 * created, `redeemed` when it settles, `cancelled` when it expires, so a cap counts reservations
 * and cannot be overshot by unpaid invoices settling together. Policies gain a `public` flag
 * (hidden tiers can still be issued by the admin).
 */
export const m005RedemptionStatus: Migration = {
  id: 5,
  name: 'redemption_status',
  up(db) {
    db.exec(`
      ALTER TABLE discount_redemptions ADD COLUMN status TEXT NOT NULL DEFAULT 'redeemed'
        CHECK (status IN ('pending', 'redeemed', 'cancelled'));
      ALTER TABLE discount_redemptions ADD COLUMN listed_currency TEXT;
      ALTER TABLE discount_redemptions ADD COLUMN discount_value INTEGER;
      CREATE INDEX discount_redemptions_status ON discount_redemptions (discount_code_id, status);
      ALTER TABLE policies ADD COLUMN public INTEGER NOT NULL DEFAULT 1 CHECK (public IN (0, 1));
    `)
  },
}
