/**
 * The outbound events and their payloads, in one place. Every event is written to the outbox
 * (webhook_deliveries) inside the transaction of the change it announces, so a change that rolls
 * back announces nothing and a committed one is never lost.
 */
import { randomUUID } from 'node:crypto'
import type { WebhookEventName } from '../contract/licensing'
import type { LicensingDb } from './db'
import type { EventOutbox } from './settlement'

type Actor = 'admin' | 'buyer' | 'system' | 'provider'

/** The `data` of each event (the envelope is `{id, event, created_at, data}`). */
export interface EventData {
  'license.issued': {
    license_id: string
    product_id: string
    policy_id: string | null
    source: 'purchase' | 'redeem' | 'complimentary'
    invoice_id: string | null
    amount_sats: number
    listed_currency: string | null
    listed_value: number | null
    buyer_email: string | null
    expires_at: string | null
  }
  'license.revoked': LicenseStatusData
  'license.suspended': LicenseStatusData
  'license.reinstated': LicenseStatusData
  'license.tier_changed': {
    license_id: string
    product_id: string
    tier_change_id: string
    from_policy_id: string | null
    to_policy_id: string
    to_policy_slug: string
    direction: string
    actor: string
    listed_currency: string
    proration_charge_value: number
    invoice_id: string | null
    entitlements: string[]
    expires_at: string | null
    buyer_email: string | null
  }
  'license.topped_up': {
    license_id: string
    product_id: string
    invoice_id: string
    tokens: number
    amount_sats: number
    listed_currency: string | null
    listed_value: number | null
    buyer_email: string | null
  }
  'machine.activated': { machine_id: string; license_id: string; hostname: string | null; platform: string | null }
  'machine.deactivated': { machine_id: string; license_id: string; reason: string; actor: Actor }
  'code.redeemed': {
    redemption_id: string
    code_id: string
    code: string
    kind: string
    invoice_id: string
    license_id: string | null
    buyer_email: string | null
  }
  'subscription.created': {
    subscription_id: string
    license_id: string
    product_id: string
    policy_id: string
    invoice_id: string
    listed_currency: string
    listed_value: number
    period_days: number
    trial_days: number
    next_renewal_at: string
    buyer_email: string | null
  }
  'subscription.renewal_pending': {
    subscription_id: string
    license_id: string
    invoice_id: string
    cycle_number: number
    checkout_url: string
    amount_sats: number
    listed_currency: string
    listed_value: number
    due_at: string
    buyer_email: string | null
  }
  'subscription.renewed': {
    subscription_id: string
    license_id: string
    invoice_id: string
    cycle_number: number
    status: string
    expires_at: string
    next_renewal_at: string
  }
  'subscription.renewal_failed': {
    subscription_id: string
    license_id: string
    consecutive_failures: number
    renewals_stopped: boolean
    reason: string
    next_attempt_at: string | null
    buyer_email: string | null
  }
  'subscription.cancelled': {
    subscription_id: string
    license_id: string
    from_status: string
    actor: Actor
    reason: string | null
    cancelled_at: string
    valid_through: string
  }
  'subscription.lapsed': {
    subscription_id: string
    license_id: string
    expired_at: string | null
    grace_period_days: number
  }
}

export interface LicenseStatusData {
  license_id: string
  product_id: string
  from_status: string
  status: string
  reason: string | null
  actor: Actor
}

export function subscribedEvents(text: string): string[] {
  try {
    const v = JSON.parse(text) as unknown
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []
  } catch {
    return []
  }
}

/** Writes one pending delivery per active endpoint subscribed to `event` (or `*`); call inside the change's transaction. */
export function enqueueEvent(db: LicensingDb, event: string, data: Record<string, unknown>, now: number): void {
  const endpoints = db.prepare('SELECT id, events FROM webhook_endpoints WHERE active = 1').all() as {
    id: string
    events: string
  }[]
  const insert = db.prepare(
    `INSERT INTO webhook_deliveries (id, endpoint_id, event, payload, status, attempts, next_attempt_at, created_at)
     VALUES (?, ?, ?, ?, 'pending', 0, ?, ?)`,
  )
  for (const ep of endpoints) {
    const events = subscribedEvents(ep.events)
    if (!events.includes('*') && !events.includes(event)) continue
    const id = randomUUID()
    const payload = JSON.stringify({ id, event, created_at: new Date(now).toISOString(), data })
    insert.run(id, ep.id, event, payload, now, now)
  }
}

/** The outbox over a database, for services built before the webhook worker (licenses, discounts). */
export function dbOutbox(db: LicensingDb): EventOutbox {
  return { enqueue: (event, data, now) => enqueueEvent(db, event, data, now) }
}

/** Queues a typed event: the one call every service uses, so names and payloads stay in step with the README. */
export function emitEvent<E extends WebhookEventName>(
  outbox: EventOutbox,
  event: E,
  data: EventData[E],
  now: number,
): void {
  outbox.enqueue(event, { ...data }, now)
}
