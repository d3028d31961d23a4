import type { Migration } from './index'

/**
 * The date a subscription's next unpaid cycle fell (or falls) due: the end of the period paid for,
 * or of the trial. A failed renewal now moves `next_renewal_at` out by its backoff, so lapse and
 * the next cycle's dates are counted from this one instead. Existing rows take the date lapse
 * already used (the earlier of `next_renewal_at` and the license expiry), and a failing one its
 * retry time (the backoff the worker waited on, from its last attempt). A row inserted without one
 * (SQLite cannot add a NOT NULL column without a constant default) takes its `next_renewal_at`,
 * which is the due date of a subscription that has not been billed yet.
 */
export const m011SubscriptionDueDate: Migration = {
  id: 11,
  name: 'subscription_due_date',
  up(db) {
    db.exec(`
      ALTER TABLE subscriptions ADD COLUMN due_at INTEGER;
      UPDATE subscriptions SET due_at = min(next_renewal_at,
        coalesce((SELECT l.expires_at FROM licenses l WHERE l.id = subscriptions.license_id), next_renewal_at));
      UPDATE subscriptions SET next_renewal_at = max(next_renewal_at, last_renewal_attempt_at + CASE consecutive_failures
          WHEN 1 THEN 300000 WHEN 2 THEN 1800000 WHEN 3 THEN 7200000 WHEN 4 THEN 21600000 ELSE 43200000 END)
        WHERE consecutive_failures > 0 AND last_renewal_attempt_at IS NOT NULL AND status IN ('active', 'past_due');
      CREATE TRIGGER IF NOT EXISTS subscriptions_due_at_default AFTER INSERT ON subscriptions
        WHEN NEW.due_at IS NULL
        BEGIN UPDATE subscriptions SET due_at = NEW.next_renewal_at WHERE id = NEW.id; END;
    `)
  },
}
