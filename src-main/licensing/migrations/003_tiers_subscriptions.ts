import type { Migration } from './index'

/**
 * Tier ladder and recurring billing fields on policies (spec 001 §2.2), and the tables the
 * subscription and tier-change issue fills (§2.5, §2.6). Existing policies stay non-recurring
 * with tier_rank NULL.
 */
export const m003TiersSubscriptions: Migration = {
  id: 3,
  name: 'tiers_and_subscriptions',
  up(db) {
    db.exec(`
      ALTER TABLE policies ADD COLUMN tier_rank INTEGER;
      ALTER TABLE policies ADD COLUMN is_recurring INTEGER NOT NULL DEFAULT 0 CHECK (is_recurring IN (0, 1));
      ALTER TABLE policies ADD COLUMN renewal_period_days INTEGER NOT NULL DEFAULT 0 CHECK (renewal_period_days >= 0);
      ALTER TABLE policies ADD COLUMN trial_days INTEGER NOT NULL DEFAULT 0 CHECK (trial_days >= 0);
      CREATE INDEX policies_tier ON policies (product_id, tier_rank);

      CREATE TABLE subscriptions (
        id TEXT PRIMARY KEY,
        license_id TEXT NOT NULL UNIQUE REFERENCES licenses(id),
        policy_id TEXT NOT NULL REFERENCES policies(id),
        status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'past_due', 'cancelled', 'lapsed')),
        listed_currency TEXT NOT NULL CHECK (listed_currency IN ('SAT', 'USD', 'EUR', 'BTC')),
        listed_value INTEGER NOT NULL CHECK (listed_value >= 0),
        period_days INTEGER NOT NULL CHECK (period_days > 0),
        next_renewal_at INTEGER NOT NULL,
        last_renewal_attempt_at INTEGER,
        consecutive_failures INTEGER NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
        cancelled_at INTEGER,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE INDEX subscriptions_due ON subscriptions (status, next_renewal_at);

      CREATE TABLE subscription_invoices (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        subscription_id TEXT NOT NULL REFERENCES subscriptions(id),
        invoice_id TEXT NOT NULL UNIQUE REFERENCES invoices(id),
        cycle_number INTEGER NOT NULL CHECK (cycle_number >= 1),
        created_at INTEGER NOT NULL,
        UNIQUE (subscription_id, cycle_number)
      );

      CREATE TABLE tier_changes (
        id TEXT PRIMARY KEY,
        license_id TEXT NOT NULL REFERENCES licenses(id),
        from_policy_id TEXT NOT NULL REFERENCES policies(id),
        to_policy_id TEXT NOT NULL REFERENCES policies(id),
        direction TEXT NOT NULL CHECK (direction IN ('upgrade', 'downgrade')),
        listed_currency TEXT NOT NULL CHECK (listed_currency IN ('SAT', 'USD', 'EUR', 'BTC')),
        proration_charge_value INTEGER NOT NULL CHECK (proration_charge_value >= 0),
        invoice_id TEXT REFERENCES invoices(id),
        effective_at INTEGER NOT NULL,
        applied_at INTEGER,
        actor TEXT NOT NULL CHECK (actor IN ('buyer', 'admin')),
        reason TEXT NOT NULL DEFAULT '',
        created_at INTEGER NOT NULL
      );
      CREATE INDEX tier_changes_license ON tier_changes (license_id);
      CREATE INDEX tier_changes_created ON tier_changes (created_at);
      CREATE UNIQUE INDEX tier_changes_invoice ON tier_changes (invoice_id) WHERE invoice_id IS NOT NULL;
    `)
  },
}
