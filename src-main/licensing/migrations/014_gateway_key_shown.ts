import type { Migration } from './index'

/**
 * When the buyer's gateway key was last handed out (issue 45): the thank-you page shows a fresh
 * secret on its first view after settlement and only says so on later views. No secret is kept,
 * only this time; NULL until it was shown. Idempotent.
 */
export const m014GatewayKeyShown: Migration = {
  id: 14,
  name: 'gateway_key_shown',
  up(db) {
    const cols = db.prepare('PRAGMA table_info(licenses)').all() as { name: string }[]
    if (cols.some((c) => c.name === 'gateway_key_shown_at')) return
    db.exec('ALTER TABLE licenses ADD COLUMN gateway_key_shown_at INTEGER')
  },
}
