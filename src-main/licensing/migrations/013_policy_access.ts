import type { Migration } from './index'

/**
 * A tier's access to the cluster: `access` holds its JSON entitlements (models, tokens per period,
 * requests per minute, concurrent streams), NULL for a tier that sells none. Idempotent.
 */
export const m013PolicyAccess: Migration = {
  id: 13,
  name: 'policy_access',
  up(db) {
    const cols = db.prepare('PRAGMA table_info(policies)').all() as { name: string }[]
    if (cols.some((c) => c.name === 'access')) return
    db.exec('ALTER TABLE policies ADD COLUMN access TEXT')
  },
}
