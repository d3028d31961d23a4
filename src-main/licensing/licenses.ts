/**
 * Licenses and the machines bound to them: issuance (signed v2 keys), the buyer endpoints that
 * authenticate with a signed key (validate, machines, recover), free-license redemption, and the
 * admin operations (search, complimentary issue, revoke, suspend, reinstate, machines).
 *
 * The database is authoritative: validate answers with the license's CURRENT status, expiry and
 * entitlements, not those signed into the key. A fingerprint is stored only as its SHA-256 (hex).
 * Single-seat licenses bind the first fingerprint validated (trust on first use); multi-seat
 * licenses activate machines up to max_machines (0 = unlimited).
 */
import { randomUUID } from 'node:crypto'
import type {
  LicenseFilter,
  LicenseQuery,
  MachineSort,
  SortOrder,
  LicenseView,
  MachineResponse,
  MachineView,
  RecoverResponse,
  ValidateInput,
  ValidateResponse,
} from '../contract/licensing'
import { ApiError } from '../contract/errors'
import type { Clock } from '../lib/clock'
import { RateLimiter } from '../lib/rateLimit'
import type { AuditLog } from './audit'
import type { Catalog, PolicyRow, ProductRow } from './productCatalog'
import { immediate, matchAny, orderBy, type LicensingDb } from './db'
import type { Discounts } from './discounts'
import { dbOutbox, emitEvent } from './outboundEvents'
import {
  CURRENT_KEY_VERSION,
  FLAG_TRIAL,
  hashFingerprint,
  isFingerprintBound,
  type LicensePayload,
} from './keys/keyFormat'
import type { Issuer } from './keys/issuer'
import type { EventOutbox } from './settlement'
import { iso, parseStringList } from './json'
import type { ValidationKind, ValidationRecorder } from './validationLog'

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

interface MachineRow {
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

const DAY_MS = 86_400_000
/** Validate refreshes a machine's last-seen time at most this often (the heartbeat endpoint always does). */
const HEARTBEAT_WRITE_MS = 60_000
const ZERO_HASH = Buffer.alloc(32)

/** Where a license stands against its expiry and grace period (graceUntil null: it never expires). */
interface Expiry {
  expired: boolean
  inGrace: boolean
  graceUntil: number | null
}

type Seat =
  | { ok: true; machineId: string; created: boolean }
  | { ok: false; reason: 'fingerprint_mismatch' | 'too_many_machines' }

const VIEW_SELECT = `
  SELECT l.*, p.slug AS product_slug, p.name AS product_name, pol.slug AS policy_slug, pol.name AS policy_name,
    (SELECT count(*) FROM machines m WHERE m.license_id = l.id AND m.status = 'active') AS active_machines
  FROM licenses l JOIN products p ON p.id = l.product_id LEFT JOIN policies pol ON pol.id = l.policy_id`

type ViewRow = LicenseRow & {
  product_slug: string
  product_name: string
  policy_slug: string | null
  policy_name: string | null
  active_machines: number
}

function toView(r: ViewRow): LicenseView {
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

const MACHINE_SELECT = `
  SELECT m.id, m.license_id, m.fingerprint_hash, m.hostname, m.platform, m.last_ip, m.status, m.activated_at,
    m.last_heartbeat_at, m.deactivated_at, m.deactivation_reason, p.slug AS product_slug, p.name AS product_name
  FROM machines m JOIN licenses l ON l.id = m.license_id JOIN products p ON p.id = l.product_id`

const MACHINE_SORT: Record<MachineSort, string> = {
  last_heartbeat_at: 'm.last_heartbeat_at',
  activated_at: 'm.activated_at',
  hostname: 'm.hostname',
  status: 'm.status',
}

export interface MachineQuery {
  license_id?: string
  include_inactive?: boolean
  q?: string
  sort?: MachineSort
  order?: SortOrder
  limit: number
  offset?: number
}

const LICENSE_SORT: Record<LicenseFilter['sort'], string> = {
  issued_at: 'l.issued_at',
  expires_at: 'l.expires_at',
  updated_at: 'l.updated_at',
  buyer_email: 'l.buyer_email',
  status: 'l.status',
  product: 'p.name',
}

/** The WHERE clause of a license list (joined with products as `p`). */
function licenseFilter(q: LicenseSearch): { where: string; args: string[] } {
  const where: string[] = []
  const args: string[] = []
  const search = matchAny(['l.id', 'l.buyer_email', 'l.invoice_id', 'l.buyer_note', 'p.slug', 'p.name'], q.q)
  if (search) {
    where.push(search.sql)
    args.push(...search.args)
  }
  if (q.product_id) {
    where.push('l.product_id = ?')
    args.push(q.product_id)
  }
  if (q.status) {
    where.push('l.status = ?')
    args.push(q.status)
  }
  return { where: where.length ? `WHERE ${where.join(' AND ')}` : '', args }
}

/** A license list's filter; sort and order default to newest issued first. */
export type LicenseSearch = Omit<LicenseFilter, 'sort' | 'order'> & Partial<Pick<LicenseFilter, 'sort' | 'order'>>

const licenseOrder = (q: LicenseSearch): string =>
  orderBy(LICENSE_SORT, q.sort ?? 'issued_at', q.order ?? 'desc', 'l.id')

/** Optional string field of a loosely typed body: undefined when absent, null when of the wrong type. */
export interface LicenseDeps {
  db: LicensingDb
  clock: Clock
  audit: AuditLog
  catalog: Catalog
  discounts: Discounts
  issuer: Issuer
  /** Where lifecycle events go; defaults to the outbox table of `db`. */
  outbox?: EventOutbox
  /** Where every validate, activate, heartbeat and deactivate is reported (the validation log). */
  validations?: ValidationRecorder
  /** Heartbeats allowed per license per minute (a burst of as many, then one per 60/n seconds). */
  heartbeatsPerMinute?: number
}

/** Who made a buyer call, as the validation log records it. */
export interface ClientInfo {
  readonly ip?: string
  readonly userAgent?: string
}

type KeyCheck = { ok: true; payload: LicensePayload; license: LicenseRow } | { ok: false; reason: string }

const STATUS_EVENTS = {
  'license.revoke': 'license.revoked',
  'license.suspend': 'license.suspended',
  'license.reinstate': 'license.reinstated',
} as const

/** Validate's answer for a license in good standing: its current state, not the key's. */
function validAnswer(r: LicenseRow, slug: string, exp: Expiry, machineId: string | undefined): ValidateResponse {
  const res: ValidateResponse = {
    ok: true,
    license_id: r.id,
    product_id: r.product_id,
    product_slug: slug,
    issued_at: iso(r.issued_at),
    is_trial: r.is_trial === 1,
    entitlements: parseStringList(r.entitlements),
    status: r.status,
    max_machines: r.max_machines,
  }
  if (r.expires_at !== null) res.expires_at = iso(r.expires_at)
  if (exp.inGrace) {
    res.in_grace_period = true
    res.grace_until = iso(exp.graceUntil!)
  }
  if (machineId !== undefined) res.machine_id = machineId
  return res
}

export class Licenses {
  private readonly db: LicensingDb
  private readonly clock: Clock
  private readonly q
  private readonly outbox: EventOutbox
  private readonly heartbeats: RateLimiter

  constructor(private readonly deps: LicenseDeps) {
    this.db = deps.db
    const perMinute = deps.heartbeatsPerMinute ?? 60
    this.heartbeats = new RateLimiter({
      capacity: perMinute,
      refillPerSecond: perMinute / 60,
      clock: deps.clock,
      maxKeys: 100_000,
    })
    this.outbox = deps.outbox ?? dbOutbox(deps.db)
    this.clock = deps.clock
    const db = this.db
    // The hot path (validate) runs on prepared statements.
    this.q = {
      license: db.prepare('SELECT * FROM licenses WHERE id = ?'),
      productSlug: db.prepare('SELECT slug FROM products WHERE id = ?').pluck(),
      machineByFp: db.prepare(
        `SELECT * FROM machines WHERE license_id = ? AND fingerprint_hash = ? AND status = 'active'`,
      ),
      activeCount: db.prepare(`SELECT count(*) FROM machines WHERE license_id = ? AND status = 'active'`).pluck(),
      heartbeat: db.prepare('UPDATE machines SET last_heartbeat_at = ?, last_ip = coalesce(?, last_ip) WHERE id = ?'),
      insertMachine: db.prepare(
        `INSERT INTO machines (id, license_id, fingerprint_hash, hostname, platform, last_ip, status, activated_at, last_heartbeat_at)
         VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?)`,
      ),
      bind: db.prepare(
        'UPDATE licenses SET fingerprint_hash = ?, updated_at = ? WHERE id = ? AND fingerprint_hash IS NULL',
      ),
      deactivate: db.prepare(
        `UPDATE machines SET status = 'inactive', deactivated_at = ?, deactivation_reason = ? WHERE id = ? AND status = 'active'`,
      ),
    }
  }

  // ---- issuance and keys ----

  row(id: string): LicenseRow | undefined {
    return this.q.license.get(id) as LicenseRow | undefined
  }

  private must(id: string): LicenseRow {
    const r = this.row(id)
    if (!r) throw new ApiError('not_found', `no license ${id}`)
    return r
  }

  view(id: string): LicenseView {
    const r = this.db.prepare(`${VIEW_SELECT} WHERE l.id = ?`).get(id) as ViewRow | undefined
    if (!r) throw new ApiError('not_found', `no license ${id}`)
    return toView(r)
  }

  /** The v2 payload for a license as it stands now (current entitlements and expiry). */
  private payloadFor(r: LicenseRow): LicensePayload {
    return {
      version: CURRENT_KEY_VERSION,
      flags: r.is_trial === 1 ? FLAG_TRIAL : 0,
      productId: r.product_id,
      licenseId: r.id,
      issuedAt: Math.floor(r.issued_at / 1000),
      expiresAt: r.expires_at === null ? 0 : Math.floor(r.expires_at / 1000),
      fingerprintHash: ZERO_HASH,
      entitlements: parseStringList(r.entitlements),
    }
  }

  freshKey(r: LicenseRow): string {
    return this.deps.issuer.sign(this.payloadFor(r))
  }

  /**
   * Issues a license under a policy: copies its entitlements, machine limit, grace and trial
   * flag, sets the expiry from its duration, signs a v2 key. Call inside a transaction when it
   * goes with other writes (settlement); `invoiceId` is unique across licenses.
   */
  issue(a: {
    product: ProductRow
    policy: PolicyRow
    source: LicenseRow['source']
    invoiceId?: string | null
    buyerEmail?: string | null
    buyerNote?: string | null
  }): { license: LicenseRow; key: string } {
    const now = this.clock.now()
    const row: LicenseRow = {
      id: randomUUID(),
      product_id: a.product.id,
      policy_id: a.policy.id,
      invoice_id: a.invoiceId ?? null,
      status: 'active',
      status_reason: null,
      source: a.source,
      license_key: '',
      issued_at: now,
      expires_at: a.policy.duration_days > 0 ? now + a.policy.duration_days * DAY_MS : null,
      grace_period_days: a.policy.grace_period_days,
      max_machines: a.policy.max_machines,
      entitlements: JSON.stringify(parseStringList(a.policy.entitlements)),
      is_trial: a.policy.is_trial,
      fingerprint_hash: null,
      buyer_email: a.buyerEmail ?? null,
      buyer_note: a.buyerNote ?? null,
      updated_at: now,
    }
    row.license_key = this.freshKey(row)
    this.db
      .prepare(
        `INSERT INTO licenses (id, product_id, policy_id, invoice_id, status, source, license_key, issued_at, expires_at,
           grace_period_days, max_machines, entitlements, is_trial, buyer_email, buyer_note, updated_at)
         VALUES (@id, @product_id, @policy_id, @invoice_id, @status, @source, @license_key, @issued_at, @expires_at,
           @grace_period_days, @max_machines, @entitlements, @is_trial, @buyer_email, @buyer_note, @updated_at)`,
      )
      .run(row)
    this.deps.audit.record({
      actor: a.source === 'complimentary' ? 'admin' : a.source === 'redeem' ? 'buyer' : 'system',
      action: 'license.issue',
      targetType: 'license',
      targetId: row.id,
      details: { product: a.product.slug, policy: a.policy.slug, source: a.source, invoice_id: row.invoice_id },
    })
    this.announceIssued(row, now)
    return { license: row, key: row.license_key }
  }

  /** license.issued for every source (paid, free redemption, admin comp), in the issuing transaction. */
  private announceIssued(row: LicenseRow, now: number): void {
    const inv = row.invoice_id
      ? (this.db
          .prepare('SELECT amount_sats, listed_currency, listed_value FROM invoices WHERE id = ?')
          .get(row.invoice_id) as
          { amount_sats: number; listed_currency: string | null; listed_value: number | null } | undefined)
      : undefined
    emitEvent(
      this.outbox,
      'license.issued',
      {
        license_id: row.id,
        product_id: row.product_id,
        policy_id: row.policy_id,
        source: row.source,
        invoice_id: row.invoice_id,
        amount_sats: inv?.amount_sats ?? 0,
        listed_currency: inv?.listed_currency ?? null,
        listed_value: inv?.listed_value ?? null,
        buyer_email: row.buyer_email,
        expires_at: row.expires_at === null ? null : iso(row.expires_at),
      },
      now,
    )
  }

  // ---- admin ----

  search(q: LicenseSearch & Pick<LicenseQuery, 'limit' | 'offset'>): { total: number; licenses: LicenseView[] } {
    const { where, args } = licenseFilter(q)
    const total = (
      this.db
        .prepare(`SELECT count(*) AS n FROM licenses l JOIN products p ON p.id = l.product_id ${where}`)
        .get(...args) as { n: number }
    ).n
    const rows = this.db
      .prepare(`${VIEW_SELECT} ${where} ${licenseOrder(q)} LIMIT ? OFFSET ?`)
      .all(...args, q.limit, q.offset) as ViewRow[]
    return { total, licenses: rows.map(toView) }
  }

  /** Every license matching a filter, in its sort order, read lazily (CSV export). */
  *matching(q: LicenseSearch, max: number): Generator<LicenseView> {
    const { where, args } = licenseFilter(q)
    const stmt = this.db.prepare(`${VIEW_SELECT} ${where} ${licenseOrder(q)} LIMIT ?`)
    for (const r of stmt.iterate(...args, max) as Iterable<ViewRow>) yield toView(r)
  }

  detail(id: string): { license: LicenseView; machines: MachineView[] } {
    return { license: this.view(id), machines: this.machines({ license_id: id, include_inactive: true, limit: 5000 }) }
  }

  issueComplimentary(a: {
    productId: string
    policyId?: string | null
    buyerEmail?: string | null
    buyerNote?: string | null
  }): {
    license: LicenseView
    license_key: string
  } {
    const product = this.deps.catalog.productRow(a.productId)
    if (!product) throw new ApiError('not_found', `no product ${a.productId}`)
    let policy: PolicyRow
    if (a.policyId) {
      const p = this.deps.catalog.policyRow(a.policyId)
      if (!p || p.product_id !== product.id)
        throw new ApiError('not_found', `product ${product.slug} has no policy ${a.policyId}`)
      policy = p
    } else policy = this.deps.catalog.resolvePolicy(product)
    const { license, key } = immediate(this.db, () =>
      this.issue({ product, policy, source: 'complimentary', buyerEmail: a.buyerEmail, buyerNote: a.buyerNote }),
    )
    return { license: this.view(license.id), license_key: key }
  }

  private setStatus(
    id: string,
    status: LicenseRow['status'],
    reason: string | null,
    action: keyof typeof STATUS_EVENTS,
  ): LicenseView {
    const cur = this.must(id)
    if (cur.status === 'revoked') throw new ApiError('conflict', 'a revoked license stays revoked')
    if (action === 'license.reinstate' && cur.status !== 'suspended')
      throw new ApiError('conflict', 'only a suspended license can be reinstated')
    const event = STATUS_EVENTS[action]
    immediate(this.db, () => {
      const now = this.clock.now()
      this.db
        .prepare('UPDATE licenses SET status = ?, status_reason = ?, updated_at = ? WHERE id = ?')
        .run(status, reason, now, id)
      this.deps.audit.record({
        actor: 'admin',
        action,
        targetType: 'license',
        targetId: id,
        details: { from: cur.status, reason },
      })
      const data = { license_id: id, product_id: cur.product_id, from_status: cur.status, status, reason }
      emitEvent(this.outbox, event, { ...data, actor: 'admin' }, now)
    })
    return this.view(id)
  }

  revoke(id: string, reason?: string | null): LicenseView {
    return this.setStatus(id, 'revoked', reason ?? null, 'license.revoke')
  }

  suspend(id: string, reason?: string | null): LicenseView {
    return this.setStatus(id, 'suspended', reason ?? null, 'license.suspend')
  }

  reinstate(id: string): LicenseView {
    return this.setStatus(id, 'active', null, 'license.reinstate')
  }

  machines(q: MachineQuery): MachineView[] {
    const where: string[] = []
    const args: (string | number)[] = []
    if (q.license_id) {
      where.push('m.license_id = ?')
      args.push(q.license_id)
    }
    if (!q.include_inactive) where.push(`m.status = 'active'`)
    const search = matchAny(['m.id', 'm.license_id', 'm.hostname', 'm.platform', 'm.last_ip', 'p.slug', 'p.name'], q.q)
    if (search) {
      where.push(search.sql)
      args.push(...search.args)
    }
    const w = where.length ? `WHERE ${where.join(' AND ')}` : ''
    const order = orderBy(MACHINE_SORT, q.sort ?? 'last_heartbeat_at', q.order ?? 'desc', 'm.id')
    return this.db
      .prepare(`${MACHINE_SELECT} ${w} ${order} LIMIT ? OFFSET ?`)
      .all(...args, q.limit, q.offset ?? 0) as MachineView[]
  }

  private machineView(id: string): MachineView {
    return this.db.prepare(`${MACHINE_SELECT} WHERE m.id = ?`).get(id) as MachineView
  }

  deactivateMachine(id: string, reason: string | null | undefined, actor: 'admin' | 'buyer' = 'admin'): MachineView {
    const m = this.db.prepare('SELECT * FROM machines WHERE id = ?').get(id) as MachineRow | undefined
    if (!m) throw new ApiError('not_found', `no machine ${id}`)
    if (m.status !== 'active') throw new ApiError('conflict', 'the machine is already inactive')
    const why = reason ?? (actor === 'admin' ? 'admin deactivate' : 'client_requested')
    this.db.transaction(() => {
      this.q.deactivate.run(this.clock.now(), why, id)
      // A single-seat license forgets its bound fingerprint so the next machine can bind.
      this.db
        .prepare(
          `UPDATE licenses SET fingerprint_hash = NULL, updated_at = ? WHERE id = ? AND max_machines = 1 AND fingerprint_hash = ?`,
        )
        .run(this.clock.now(), m.license_id, m.fingerprint_hash)
      this.deps.audit.record({
        actor,
        action: 'machine.deactivate',
        targetType: 'machine',
        targetId: id,
        details: { license_id: m.license_id, reason: why },
      })
      const data = { machine_id: id, license_id: m.license_id, reason: why, actor }
      emitEvent(this.outbox, 'machine.deactivated', data, this.clock.now())
    })()
    return this.machineView(id)
  }

  // ---- buyer: key-authenticated ----

  /** A verified key and its license, or why not (for the validation log; callers get one answer). */
  private checkKey(keyText: string): KeyCheck {
    const v = this.deps.issuer.verify(keyText)
    if (!v.ok) return { ok: false, reason: v.reason }
    const license = this.row(v.payload.licenseId)
    if (!license || license.product_id !== v.payload.productId) return { ok: false, reason: 'not_found' }
    return { ok: true, payload: v.payload, license }
  }

  /** A verified key and its license; any failure is the same 401 so nothing leaks about what exists. */
  authenticate(keyText: string): { payload: LicensePayload; license: LicenseRow } {
    const k = this.checkKey(keyText)
    if (!k.ok) throw new ApiError('unauthorized', 'invalid license key')
    return k
  }

  /**
   * As authenticate, for what a key may still do to its license (quote, upgrade, cancel): a revoked
   * or suspended license's key gets the very same 401, as Keysat answers, so its state does not leak.
   */
  authenticateActive(keyText: string): { payload: LicensePayload; license: LicenseRow } {
    const k = this.checkKey(keyText)
    if (!k.ok || k.license.status !== 'active') throw new ApiError('unauthorized', 'invalid license key')
    return k
  }

  private report(
    kind: ValidationKind,
    keyText: string,
    licenseId: string | null | undefined,
    res: { ok: boolean; reason?: string },
    fingerprintHash: string | null,
    client: ClientInfo,
  ): void {
    this.deps.validations?.record({
      kind,
      licenseId: licenseId ?? null,
      keyText,
      ok: res.ok,
      result: res.ok ? 'ok' : (res.reason ?? 'refused'),
      fingerprintHash,
      clientIp: client.ip,
      userAgent: client.userAgent,
    })
  }

  /**
   * A machine call authenticated by its key: a key that resolves to no license is reported and
   * answered 401; otherwise `run` answers and its answer is reported.
   */
  private machineCall(
    kind: Exclude<ValidationKind, 'validate'>,
    a: { key: string; fingerprint: string },
    client: ClientInfo,
    run: (r: LicenseRow, fpHash: string) => MachineResponse,
  ): MachineResponse {
    const fpHash = hashFingerprint(a.fingerprint).toString('hex')
    const k = this.checkKey(a.key)
    if (!k.ok) {
      this.report(kind, a.key, null, k, fpHash, client)
      throw new ApiError('unauthorized', 'invalid license key')
    }
    const res = run(k.license, fpHash)
    this.report(kind, a.key, k.license.id, res, fpHash, client)
    return res
  }

  /** Expiry with grace: expired once past expires_at + grace days; in grace between the two. */
  private expiry(r: LicenseRow, now: number): Expiry {
    if (r.expires_at === null) return { expired: false, inGrace: false, graceUntil: null }
    const graceUntil = r.expires_at + r.grace_period_days * DAY_MS
    return { expired: now >= graceUntil, inGrace: now >= r.expires_at && now < graceUntil, graceUntil }
  }

  /**
   * Takes or refreshes a seat for a fingerprint hash. Single-seat licenses bind the first
   * fingerprint (TOFU) and refuse others; multi-seat ones activate up to the limit.
   */
  private seat(
    r: LicenseRow,
    fpHash: string,
    meta: { hostname?: string | null; platform?: string | null; ip?: string | null },
  ): Seat {
    const now = this.clock.now()
    // A machine that checked in within the last minute needs no write: validate stays read-only for it.
    const seen = this.q.machineByFp.get(r.id, fpHash) as MachineRow | undefined
    if (seen && now - seen.last_heartbeat_at < HEARTBEAT_WRITE_MS)
      return { ok: true, machineId: seen.id, created: false }
    return immediate(this.db, (): Seat => {
      const existing = this.q.machineByFp.get(r.id, fpHash) as MachineRow | undefined
      const current = this.row(r.id)!
      if (current.max_machines === 1 && current.fingerprint_hash !== null && current.fingerprint_hash !== fpHash)
        return { ok: false, reason: 'fingerprint_mismatch' }
      if (existing) {
        this.q.heartbeat.run(now, meta.ip ?? null, existing.id)
        return { ok: true, machineId: existing.id, created: false }
      }
      const active = this.q.activeCount.get(r.id) as number
      if (current.max_machines > 0 && active >= current.max_machines) {
        return { ok: false, reason: current.max_machines === 1 ? 'fingerprint_mismatch' : 'too_many_machines' }
      }
      const id = randomUUID()
      this.q.insertMachine.run(
        id,
        r.id,
        fpHash,
        meta.hostname ?? null,
        meta.platform ?? null,
        meta.ip ?? null,
        now,
        now,
      )
      if (current.max_machines === 1) this.q.bind.run(fpHash, now, r.id)
      this.deps.audit.record({
        actor: 'buyer',
        action: 'machine.activate',
        targetType: 'machine',
        targetId: id,
        details: { license_id: r.id },
      })
      const data = {
        machine_id: id,
        license_id: r.id,
        hostname: meta.hostname ?? null,
        platform: meta.platform ?? null,
      }
      emitEvent(this.outbox, 'machine.activated', data, now)
      return { ok: true, machineId: id, created: true }
    })
  }

  validate(input: ValidateInput, client: ClientInfo = {}): ValidateResponse {
    const fp = input.fingerprint ? hashFingerprint(input.fingerprint) : null
    const res = this.check(input, fp, client.ip)
    this.report('validate', input.key, res.license_id, res, fp ? fp.toString('hex') : null, client)
    return res
  }

  private check(input: ValidateInput, fp: Buffer | null, clientIp?: string): ValidateResponse {
    const productSlug = input.product_slug ?? undefined
    const v = this.deps.issuer.verify(input.key)
    if (!v.ok) return { ok: false, reason: v.reason }
    const r = this.row(v.payload.licenseId)
    if (!r || r.product_id !== v.payload.productId) return { ok: false, reason: 'not_found' }
    if (r.status !== 'active') return { ok: false, reason: r.status, license_id: r.id, status: r.status }
    const slug = this.q.productSlug.get(r.product_id) as string
    if (productSlug !== undefined && productSlug !== slug)
      return { ok: false, reason: 'product_mismatch', license_id: r.id }
    const exp = this.expiry(r, this.clock.now())
    if (exp.expired)
      return {
        ok: false,
        reason: 'expired',
        license_id: r.id,
        product_id: r.product_id,
        expires_at: iso(r.expires_at!),
        grace_until: iso(exp.graceUntil!),
      }
    const seat = fp === null ? null : this.validateSeat(r, v.payload, fp, input, clientIp)
    if (seat && !seat.ok) return seat.refusal
    return validAnswer(r, slug, exp, seat?.machineId)
  }

  /**
   * Validate's seat for the caller's fingerprint: a key signed for another machine is refused
   * before any seat is taken.
   */
  private validateSeat(
    r: LicenseRow,
    payload: LicensePayload,
    fp: Buffer,
    input: ValidateInput,
    clientIp: string | undefined,
  ): { ok: true; machineId: string } | { ok: false; refusal: ValidateResponse } {
    if (isFingerprintBound(payload) && !fp.equals(payload.fingerprintHash))
      return { ok: false, refusal: { ok: false, reason: 'fingerprint_mismatch', license_id: r.id } }
    const s = this.seat(r, fp.toString('hex'), {
      hostname: input.hostname ?? undefined,
      platform: input.platform ?? undefined,
      ip: clientIp,
    })
    if (!s.ok)
      return {
        ok: false,
        refusal: {
          ok: false,
          reason: s.reason,
          license_id: r.id,
          product_id: r.product_id,
          max_machines: r.max_machines,
        },
      }
    return { ok: true, machineId: s.machineId }
  }

  activate(
    a: { key: string; fingerprint: string; hostname?: string | null; platform?: string | null },
    client: ClientInfo = {},
  ): MachineResponse {
    return this.machineCall('activate', a, client, (r, fpHash) => {
      if (r.status !== 'active') return { ok: false, reason: r.status, active_count: 0, max_machines: r.max_machines }
      if (this.expiry(r, this.clock.now()).expired)
        return { ok: false, reason: 'expired', max_machines: r.max_machines }
      const s = this.seat(r, fpHash, { hostname: a.hostname, platform: a.platform, ip: client.ip })
      const count = this.q.activeCount.get(r.id) as number
      if (!s.ok) return { ok: false, reason: s.reason, active_count: count, max_machines: r.max_machines }
      return { ok: true, machine_id: s.machineId, active_count: count, max_machines: r.max_machines }
    })
  }

  heartbeat(a: { key: string; fingerprint: string }, client: ClientInfo = {}): MachineResponse {
    return this.machineCall('heartbeat', a, client, (r, fpHash) => {
      if (r.status !== 'active') return { ok: false, reason: r.status }
      // Keysat's answer to a client heartbeating too often: a 200 the SDKs read as a refusal, not an error.
      if (!this.heartbeats.take(r.id)) return { ok: false, reason: 'rate_limited' }
      const m = this.q.machineByFp.get(r.id, fpHash) as MachineRow | undefined
      if (!m) return { ok: false, reason: 'not_activated' }
      this.q.heartbeat.run(this.clock.now(), client.ip ?? null, m.id)
      return { ok: true, machine_id: m.id }
    })
  }

  deactivate(
    a: { key: string; fingerprint: string; reason?: string | null },
    client: ClientInfo = {},
  ): MachineResponse {
    return this.machineCall('deactivate', a, client, (r, fpHash) => {
      const m = this.q.machineByFp.get(r.id, fpHash) as MachineRow | undefined
      if (!m) return { ok: false, reason: 'not_found' }
      this.deactivateMachine(m.id, a.reason ?? 'client_requested', 'buyer')
      return {
        ok: true,
        machine_id: m.id,
        active_count: this.q.activeCount.get(r.id) as number,
        max_machines: r.max_machines,
      }
    })
  }

  recover(keyText: string): RecoverResponse {
    return this.recoverLicense(this.authenticate(keyText).license, 'key')
  }

  /** The recover answer for a license the caller has proved they hold (by its key, or its invoice and e-mail). */
  recoverLicense(r: LicenseRow, via: 'key' | 'invoice_email'): RecoverResponse {
    const v = this.view(r.id)
    const exp = this.expiry(r, this.clock.now())
    this.deps.audit.record({
      actor: 'buyer',
      action: 'license.recover',
      targetType: 'license',
      targetId: r.id,
      details: { via },
    })
    const policy = r.policy_id ? this.deps.catalog.policyRow(r.policy_id) : undefined
    return {
      ok: true,
      license_id: r.id,
      license_key: r.status === 'revoked' ? null : this.freshKey(r),
      product_id: r.product_id,
      product_slug: v.product_slug,
      product_name: v.product_name,
      policy_slug: v.policy_slug,
      policy_name: policy?.name ?? null,
      status: r.status,
      issued_at: iso(r.issued_at),
      expires_at: r.expires_at === null ? null : iso(r.expires_at),
      grace_until: exp.graceUntil === null ? null : iso(exp.graceUntil),
      is_trial: r.is_trial === 1,
      entitlements: v.entitlements,
      max_machines: r.max_machines,
      active_machines: v.active_machines,
    }
  }

  /** Redeems a free_license code: a settled zero-sats invoice, one license, one redemption, in one transaction. */
  redeem(a: {
    product: string
    code: string
    policy?: string | null
    buyerEmail?: string | null
    buyerNote?: string | null
  }): { license_id: string; license_key: string; invoice_id: string; redemption_id: string } {
    const product = this.deps.catalog.productBySlug(a.product)
    if (!product || product.active !== 1) throw new ApiError('not_found', `no product ${a.product}`)
    const policy = this.deps.catalog.resolvePolicy(product, a.policy)
    if (policy.public !== 1) throw new ApiError('not_found', `product ${product.slug} has no tier ${policy.slug}`)
    const pre = this.deps.discounts.check(a.code, product, policy)
    if (pre.kind !== 'free_license')
      throw new ApiError(
        'discount_wrong_kind',
        `code ${pre.code} is a discount, not a free license: use it at checkout`,
        { status: 400 },
      )
    return immediate(this.db, () => {
      const d = this.deps.discounts.check(a.code, product, policy) // again, under the write lock: the cap is exact
      const now = this.clock.now()
      const invoiceId = randomUUID()
      this.db
        .prepare(
          `INSERT INTO invoices (id, kind, product_id, policy_id, provider, amount_sats, status, discount_code_id, discount_value,
             buyer_email, buyer_note, created_at, updated_at, settled_at)
           VALUES (?, 'redeem', ?, ?, 'free', 0, 'settled', ?, NULL, ?, ?, ?, ?, ?)`,
        )
        .run(invoiceId, product.id, policy.id, d.id, a.buyerEmail ?? null, a.buyerNote ?? null, now, now, now)
      const { license, key } = this.issue({
        product,
        policy,
        source: 'redeem',
        invoiceId,
        buyerEmail: a.buyerEmail,
        buyerNote: a.buyerNote,
      })
      this.db.prepare('UPDATE invoices SET issued_license_id = ? WHERE id = ?').run(license.id, invoiceId)
      const redemptionId = this.deps.discounts.reserve({
        codeId: d.id,
        invoiceId,
        listedCurrency: 'SAT',
        discountValue: 0,
        buyerEmail: a.buyerEmail,
        status: 'redeemed',
        licenseId: license.id,
      })
      this.deps.audit.record({
        actor: 'buyer',
        action: 'discount.redeem',
        targetType: 'discount_code',
        targetId: d.id,
        details: { license_id: license.id, invoice_id: invoiceId },
      })
      return { license_id: license.id, license_key: key, invoice_id: invoiceId, redemption_id: redemptionId }
    })
  }
}
