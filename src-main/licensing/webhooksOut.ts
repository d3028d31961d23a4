import { createHmac, randomUUID } from 'node:crypto'
import type { z } from 'zod'
import type {
  WebhookEndpointInput,
  WebhookEndpointPatch,
  WebhookEndpointQuery,
  WebhookDeliveryView,
  WebhookEndpointView,
} from '../contract/licensing'
import { ApiError } from '../contract/errors'
import type { Clock } from '../lib/clock'
import { httpCall } from '../lib/httpClient'
import { redactUrlCredentials, type Logger } from '../lib/logger'
import { WriteOutage } from '../lib/writeOutage'
import type { AuditLog } from './audit'
import { equals, orderBy, searchAny, whereAll, type LicensingDb } from './db'
import { enqueueEvent, subscribedEvents } from './outboundEvents'
import type { EventOutbox } from './settlement'

/** Seconds to wait before attempt n+1 after n failures; after the last, the delivery fails. */
export const RETRY_BACKOFF_S = [30, 120, 600, 3600, 6 * 3600, 12 * 3600] as const
const DELIVERY_TIMEOUT_MS = 10_000
const BATCH = 20

interface EndpointRow {
  id: string
  url: string
  secret: string
  events: string
  description: string
  active: number
  created_at: number
  updated_at: number
}

interface DeliveryRow {
  id: string
  endpoint_id: string
  event: string
  payload: string
  status: 'pending' | 'delivered' | 'failed'
  attempts: number
}

type EndpointListRow = EndpointRow & { pending: number; failed: number }

/** The URL as the admin sees it: a password in it masked. SQL searches and sorts on this, never on the stored URL. */
const SHOWN_URL = 'shown_url(e.url)'

const ENDPOINT_SORT: Record<WebhookEndpointQuery['sort'], string> = {
  created_at: 'e.created_at',
  updated_at: 'e.updated_at',
  url: SHOWN_URL,
}

const ENDPOINT_SELECT = `SELECT e.*,
    (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.status = 'pending') AS pending,
    (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.status = 'failed') AS failed
  FROM webhook_endpoints e`

function endpointView(r: EndpointListRow): WebhookEndpointView {
  return {
    id: r.id,
    url: redactUrlCredentials(r.url),
    events: subscribedEvents(r.events),
    description: r.description,
    active: r.active === 1,
    created_at: r.created_at,
    updated_at: r.updated_at,
    pending: r.pending,
    failed: r.failed,
  }
}

export function signBody(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`
}

export type Poster = (
  url: string,
  init: { headers: Record<string, string>; body: string; signal: AbortSignal },
) => Promise<{ status: number }>

const defaultPoster: Poster = async (url, init) => {
  const res = await httpCall(url, { method: 'POST', headers: init.headers, body: init.body, signal: init.signal })
  res.discard()
  return { status: res.status }
}

/**
 * Outbound webhooks: operator-registered endpoints, an outbox of deliveries written in the same
 * transaction as the change they announce, and a worker that posts them signed with
 * `X-Tandem-Signature: sha256=<hex HMAC of the raw body>` and retries with backoff.
 */
export class OutboundWebhooks implements EventOutbox {
  private timer: NodeJS.Timeout | null = null
  private running: Promise<void> | null = null
  /**
   * Results of posted deliveries the database refused to record (a full disk), by delivery: written
   * before anything is posted again, so a delivery that reached its endpoint is not posted twice.
   */
  private readonly unwritten = new Map<string, () => void>()
  private readonly outage: WriteOutage

  constructor(
    private readonly deps: {
      db: LicensingDb
      clock: Clock
      logger: Logger
      audit: AuditLog
      post?: Poster
      intervalMs?: number
      /** DATA_DIR, where the database lives (a SQLite I/O error there counts as full when it has no room). */
      dataDir?: string
    },
  ) {
    this.outage = new WriteOutage({
      logger: deps.logger,
      clock: deps.clock,
      dataDir: deps.dataDir,
      what: 'webhook delivery results',
      meanwhile: 'results are kept in memory and nothing more is posted until they are recorded',
    })
    deps.db.function('shown_url', { deterministic: true }, (url: unknown) => redactUrlCredentials(String(url)))
    for (const r of this.deps.db.prepare('SELECT secret FROM webhook_endpoints').all() as { secret: string }[]) {
      deps.logger.redactor.add(r.secret)
    }
  }

  // --- endpoints (admin) ---

  /** One page of endpoints matching the search (URL as shown, or description), and how many match. */
  endpoints(q: WebhookEndpointQuery): { total: number; endpoints: WebhookEndpointView[] } {
    const { where, args } = searchAny([SHOWN_URL, 'e.description'], q.q)
    const db = this.deps.db
    const total = (db.prepare(`SELECT count(*) AS n FROM webhook_endpoints e ${where}`).get(...args) as { n: number }).n
    const rows = db
      .prepare(`${ENDPOINT_SELECT} ${where} ${orderBy(ENDPOINT_SORT, q.sort, q.order, 'e.id')} LIMIT ? OFFSET ?`)
      .all(...args, q.limit, q.offset) as EndpointListRow[]
    return { total, endpoints: rows.map(endpointView) }
  }

  private endpointView(id: string): WebhookEndpointView {
    const r = this.deps.db.prepare(`${ENDPOINT_SELECT} WHERE e.id = ?`).get(id) as EndpointListRow | undefined
    if (!r) throw new ApiError('not_found', 'no such webhook endpoint')
    return endpointView(r)
  }

  createEndpoint(e: z.output<typeof WebhookEndpointInput>): WebhookEndpointView {
    const id = randomUUID()
    const now = this.deps.clock.now()
    this.deps.logger.redactor.add(e.secret)
    this.deps.db
      .prepare(
        `INSERT INTO webhook_endpoints (id, url, secret, events, description, active, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(id, e.url, e.secret, JSON.stringify(e.events), e.description, e.active ? 1 : 0, now, now)
    this.deps.audit.record({
      actor: 'admin',
      action: 'webhook_endpoint.created',
      targetType: 'webhook_endpoint',
      targetId: id,
      details: { url: e.url, events: e.events },
    })
    return this.endpointView(id)
  }

  updateEndpoint(p: z.output<typeof WebhookEndpointPatch>): WebhookEndpointView {
    const row = this.deps.db.prepare('SELECT * FROM webhook_endpoints WHERE id = ?').get(p.id) as
      EndpointRow | undefined
    if (!row) throw new ApiError('not_found', 'no such webhook endpoint')
    if (p.secret) this.deps.logger.redactor.add(p.secret)
    this.deps.db
      .prepare(
        'UPDATE webhook_endpoints SET url = ?, secret = ?, events = ?, description = ?, active = ?, updated_at = ? WHERE id = ?',
      )
      .run(
        p.url ?? row.url,
        p.secret ?? row.secret,
        p.events ? JSON.stringify(p.events) : row.events,
        p.description ?? row.description,
        p.active === undefined ? row.active : p.active ? 1 : 0,
        this.deps.clock.now(),
        p.id,
      )
    this.deps.audit.record({
      actor: 'admin',
      action: 'webhook_endpoint.updated',
      targetType: 'webhook_endpoint',
      targetId: p.id,
      details: { url: p.url, events: p.events, active: p.active, secret_changed: Boolean(p.secret) },
    })
    return this.endpointView(p.id)
  }

  deleteEndpoint(id: string): void {
    const gone = this.deps.db.prepare('DELETE FROM webhook_endpoints WHERE id = ?').run(id).changes
    if (gone === 0) throw new ApiError('not_found', 'no such webhook endpoint')
    this.deps.audit.record({
      actor: 'admin',
      action: 'webhook_endpoint.deleted',
      targetType: 'webhook_endpoint',
      targetId: id,
      details: {},
    })
  }

  // --- deliveries ---

  /** Writes one delivery per active endpoint subscribed to `event`; call inside the change's transaction. */
  enqueue(event: string, data: Record<string, unknown>, now: number): void {
    enqueueEvent(this.deps.db, event, data, now)
  }

  /** Queues a `webhook.test` delivery to one endpoint, whatever its event filter. */
  sendTest(endpointId: string): WebhookDeliveryView {
    this.endpointView(endpointId)
    const id = randomUUID()
    const now = this.deps.clock.now()
    const payload = JSON.stringify({ id, event: 'webhook.test', created_at: new Date(now).toISOString(), data: {} })
    this.deps.db
      .prepare(
        `INSERT INTO webhook_deliveries (id, endpoint_id, event, payload, status, attempts, next_attempt_at, created_at)
         VALUES (?, ?, 'webhook.test', ?, 'pending', 0, ?, ?)`,
      )
      .run(id, endpointId, payload, now, now)
    this.kick()
    return this.delivery(id)
  }

  listDeliveries(q: {
    endpoint_id?: string
    status?: 'pending' | 'delivered' | 'failed'
    limit: number
  }): WebhookDeliveryView[] {
    const { where, args } = whereAll([
      equals('d.endpoint_id', q.endpoint_id || undefined),
      equals('d.status', q.status || undefined),
    ])
    const rows = this.deps.db
      .prepare(
        `SELECT d.*, e.url AS endpoint_url FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
         ${where} ORDER BY d.created_at DESC, d.id LIMIT ?`,
      )
      .all(...args, q.limit) as WebhookDeliveryView[]
    return rows.map((d) => ({ ...d, endpoint_url: redactUrlCredentials(d.endpoint_url) }))
  }

  delivery(id: string): WebhookDeliveryView {
    const d = this.deps.db
      .prepare(
        'SELECT d.*, e.url AS endpoint_url FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE d.id = ?',
      )
      .get(id) as WebhookDeliveryView | undefined
    if (!d) throw new ApiError('not_found', 'no such delivery')
    return { ...d, endpoint_url: redactUrlCredentials(d.endpoint_url) }
  }

  /** Puts a failed (or pending) delivery back at the head of the queue. */
  retry(id: string): WebhookDeliveryView {
    const now = this.deps.clock.now()
    const n = this.deps.db
      .prepare(
        "UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ? WHERE id = ? AND status <> 'delivered'",
      )
      .run(now, id).changes
    if (n === 0) {
      this.delivery(id)
      throw new ApiError('conflict', 'that delivery already succeeded')
    }
    this.kick()
    return this.delivery(id)
  }

  /** One pass of the worker: posts every due delivery once (none while results wait to be recorded). */
  async tick(): Promise<{ attempted: number; delivered: number }> {
    if (!this.writeBack()) return { attempted: 0, delivered: 0 }
    const now = this.deps.clock.now()
    const due = this.deps.db
      .prepare(
        `SELECT d.id, d.endpoint_id, d.event, d.payload, d.status, d.attempts, e.url, e.secret
         FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
         WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND e.active = 1
         ORDER BY d.next_attempt_at, d.created_at LIMIT ?`,
      )
      .all(now, BATCH) as (DeliveryRow & { url: string; secret: string })[]
    let delivered = 0
    for (const d of due) {
      if (await this.attempt(d)) delivered++
    }
    return { attempted: due.length, delivered }
  }

  private async attempt(d: DeliveryRow & { url: string; secret: string }): Promise<boolean> {
    const post = this.deps.post ?? defaultPoster
    let code: number | null = null
    let error: string | null = null
    try {
      const res = await post(d.url, {
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Tandem-Webhooks/1',
          'x-tandem-signature': signBody(d.secret, d.payload),
          'x-tandem-event': d.event,
          'x-tandem-delivery': d.id,
        },
        body: d.payload,
        signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
      })
      code = res.status
      if (res.status < 200 || res.status >= 300) error = `HTTP ${res.status}`
    } catch (err) {
      error = (err as Error).message.slice(0, 300)
    }
    const now = this.deps.clock.now()
    const attempts = d.attempts + 1
    if (error === null) {
      this.record(d.id, () =>
        this.deps.db
          .prepare(
            `UPDATE webhook_deliveries SET status = 'delivered', attempts = ?, last_attempt_at = ?, last_status_code = ?,
             last_error = NULL, delivered_at = ?, next_attempt_at = NULL WHERE id = ?`,
          )
          .run(attempts, now, code, now, d.id),
      )
      return true
    }
    const backoff = RETRY_BACKOFF_S[attempts - 1]
    this.record(d.id, () =>
      this.deps.db
        .prepare(
          `UPDATE webhook_deliveries SET status = ?, attempts = ?, last_attempt_at = ?, last_status_code = ?, last_error = ?,
           next_attempt_at = ? WHERE id = ?`,
        )
        .run(
          backoff === undefined ? 'failed' : 'pending',
          attempts,
          now,
          code,
          error,
          backoff === undefined ? null : now + backoff * 1000,
          d.id,
        ),
    )
    this.deps.logger.warn('webhook delivery failed', { delivery: d.id, event: d.event, attempts, error })
    return false
  }

  /** Records a delivery's result; one the database refuses is kept for writeBack and the outage told once. */
  private record(id: string, write: () => unknown): void {
    try {
      write()
    } catch (err) {
      this.unwritten.set(id, write)
      this.outage.fail(err)
      return
    }
    this.outage.written()
  }

  /** Records the results kept from an outage; true when none is left to record. */
  private writeBack(): boolean {
    if (this.unwritten.size === 0) return true
    for (const [id, write] of this.unwritten) {
      try {
        write()
      } catch (err) {
        this.outage.fail(err)
        return false
      }
      this.unwritten.delete(id)
    }
    this.outage.written()
    return true
  }

  start(): void {
    if (this.timer) return
    this.timer = setInterval(() => this.kick(), this.deps.intervalMs ?? 5_000)
    this.timer.unref()
  }

  /** Runs a tick now unless one is already running. */
  kick(): void {
    if (this.running) return
    this.running = this.tick()
      .then(() => undefined)
      .catch((err: unknown) => this.deps.logger.error('webhook worker failed', { error: err }))
      .finally(() => {
        this.running = null
      })
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    await this.running
  }
}
