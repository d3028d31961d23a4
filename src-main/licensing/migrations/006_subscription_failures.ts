import type { Migration } from './index'

/**
 * Why a subscription's renewals are backing off or have stopped (the provider's refusal), so the
 * operator can see it next to `consecutive_failures`.
 */
export const m006SubscriptionFailures: Migration = {
  id: 6,
  name: 'subscription_failures',
  up(db) {
    db.exec(`ALTER TABLE subscriptions ADD COLUMN failure_reason TEXT;`)
  },
}
