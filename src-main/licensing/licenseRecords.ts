/**
 * What every license use case reads: the license and machine rows, the admin views over them, and
 * where a license stands against its expiry. The database is authoritative: answers carry a
 * license's CURRENT status, expiry and entitlements, not those signed into its key.
 */
import type { LicenseView, MachineView } from '../contract/licensing'
import { ApiError } from '../contract/errors'
import type { LicensingDb } from './db'
import { parseStringList } from './json'

export interface LicenseRow {
  id: string
  product_id: string
  policy_id: string | null
  invoice_id: string | null
  status: 'active' | 'suspended' | 'revoked'
  status_reason: string | null
  source: 'purchase' | 'complimentary' | 'redeem'
  license_key: string
  issued_at: number
  expires_at: number | null
  grace_period_days: number
  max_machines: number
  entitlements: string
  is_trial: number
  fingerprint_hash: string | null
  buyer_email: string | null
  buyer_note: string | null
  updated_at: number
}

export interface MachineRow {
  id: string
  license_id: string
  fingerprint_hash: string
  hostname: string | null
  platform: string | null
  last_ip: string | null
  status: 'active' | 'inactive'
  activated_at: number
  last_heartbeat_at: number
  deactivated_at: number | null
  deactivation_reason: string | null
}

/** Who made a buyer call, as the validation log records it. */
export interface ClientInfo {
  readonly ip?: string
  readonly userAgent?: string
}

export const DAY_MS = 86_400_000

export const VIEW_SELECT = `
  SELECT l.*, p.slug AS product_slug, p.name AS product_name, pol.slug AS policy_slug, pol.name AS policy_name,
    (SELECT count(*) FROM machines m WHERE m.license_id = l.id AND m.status = 'active') AS active_machines
  FROM licenses l JOIN products p ON p.id = l.product_id LEFT JOIN policies pol ON pol.id = l.policy_id`

export type ViewRow = LicenseRow & {
  product_slug: string
  product_name: string
  policy_slug: string | null
  policy_name: string | null
  active_machines: number
}

export function toView(r: ViewRow): LicenseView {
  return {
    id: r.id,
    product_id: r.product_id,
    product_slug: r.product_slug,
    product_name: r.product_name,
    policy_id: r.policy_id,
    policy_slug: r.policy_slug,
    policy_name: r.policy_name,
    invoice_id: r.invoice_id,
    status: r.status,
    status_reason: r.status_reason,
    source: r.source,
    issued_at: r.issued_at,
    expires_at: r.expires_at,
    grace_period_days: r.grace_period_days,
    max_machines: r.max_machines,
    entitlements: parseStringList(r.entitlements),
    is_trial: r.is_trial === 1,
    bound: r.fingerprint_hash !== null,
    buyer_email: r.buyer_email,
    buyer_note: r.buyer_note,
    active_machines: r.active_machines,
    updated_at: r.updated_at,
  }
}

export const MACHINE_SELECT = `
  SELECT m.id, m.license_id, m.fingerprint_hash, m.hostname, m.platform, m.last_ip, m.status, m.activated_at,
    m.last_heartbeat_at, m.deactivated_at, m.deactivation_reason, p.slug AS product_slug, p.name AS product_name
  FROM machines m JOIN licenses l ON l.id = m.license_id JOIN products p ON p.id = l.product_id`

/** One license as the admin sees it; not_found when there is none. */
export function licenseView(db: LicensingDb, id: string): LicenseView {
  const r = db.prepare(`${VIEW_SELECT} WHERE l.id = ?`).get(id) as ViewRow | undefined
  if (!r) throw new ApiError('not_found', `no license ${id}`)
  return toView(r)
}

export function machineView(db: LicensingDb, id: string): MachineView {
  return db.prepare(`${MACHINE_SELECT} WHERE m.id = ?`).get(id) as MachineView
}

/** Where a license stands against its expiry and grace period (graceUntil null: it never expires). */
export interface Expiry {
  expired: boolean
  inGrace: boolean
  graceUntil: number | null
}

/** Expiry with grace: expired once past expires_at + grace days; in grace between the two. */
export function expiryOf(r: Pick<LicenseRow, 'expires_at' | 'grace_period_days'>, now: number): Expiry {
  if (r.expires_at === null) return { expired: false, inGrace: false, graceUntil: null }
  const graceUntil = r.expires_at + r.grace_period_days * DAY_MS
  return { expired: now >= graceUntil, inGrace: now >= r.expires_at && now < graceUntil, graceUntil }
}
