import type { Migration } from './index'

/**
 * Indexes for the admin lists' default sorts (newest first), so the first page of a large
 * license, invoice, subscription or machine list reads a few index entries, not the table.
 */
export const m010AdminListIndexes: Migration = {
  id: 10,
  name: 'admin_list_indexes',
  up(db) {
    db.exec(`
      CREATE INDEX IF NOT EXISTS licenses_issued ON licenses (issued_at, id);
      CREATE INDEX IF NOT EXISTS invoices_created ON invoices (created_at, id);
      CREATE INDEX IF NOT EXISTS subscriptions_created ON subscriptions (created_at, id);
      CREATE INDEX IF NOT EXISTS machines_heartbeat ON machines (last_heartbeat_at, id);
    `)
  },
}
