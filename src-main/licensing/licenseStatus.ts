/** An admin's status changes: revoke (for good), suspend, reinstate a suspended license. */
import type { LicenseView } from '../contract/licensing'
import { ApiError } from '../contract/errors'
import type { Clock } from '../lib/clock'
import type { AuditLog } from './audit'
import { immediate, type LicensingDb } from './db'
import type { LicenseLookup } from './licenseLookup'
import type { LicenseRow } from './licenseRecords'
import { emitEvent } from './outboundEvents'
import type { EventOutbox } from './settlement'

const STATUS_EVENTS = {
  'license.revoke': 'license.revoked',
  'license.suspend': 'license.suspended',
  'license.reinstate': 'license.reinstated',
} as const

export class LicenseStatus {
  constructor(
    private readonly deps: {
      db: LicensingDb
      clock: Clock
      audit: AuditLog
      outbox: EventOutbox
      lookup: LicenseLookup
    },
  ) {}

  revoke(id: string, reason?: string | null): LicenseView {
    return this.set(id, 'revoked', reason ?? null, 'license.revoke')
  }

  suspend(id: string, reason?: string | null): LicenseView {
    return this.set(id, 'suspended', reason ?? null, 'license.suspend')
  }

  reinstate(id: string): LicenseView {
    return this.set(id, 'active', null, 'license.reinstate')
  }

  private set(
    id: string,
    status: LicenseRow['status'],
    reason: string | null,
    action: keyof typeof STATUS_EVENTS,
  ): LicenseView {
    const { db, clock, audit, lookup } = this.deps
    const cur = lookup.must(id)
    if (cur.status === 'revoked') throw new ApiError('conflict', 'a revoked license stays revoked')
    if (action === 'license.reinstate' && cur.status !== 'suspended')
      throw new ApiError('conflict', 'only a suspended license can be reinstated')
    const event = STATUS_EVENTS[action]
    immediate(db, () => {
      const now = clock.now()
      db.prepare('UPDATE licenses SET status = ?, status_reason = ?, updated_at = ? WHERE id = ?').run(
        status,
        reason,
        now,
        id,
      )
      audit.record({
        actor: 'admin',
        action,
        targetType: 'license',
        targetId: id,
        details: { from: cur.status, reason },
      })
      const data = { license_id: id, product_id: cur.product_id, from_status: cur.status, status, reason }
      emitEvent(this.deps.outbox, event, { ...data, actor: 'admin' }, now)
    })
    return lookup.view(id)
  }
}
