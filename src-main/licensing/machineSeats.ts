/**
 * Machines on a license, as its key's holder and the admin manage them. A fingerprint is stored only
 * as its SHA-256 (hex). Single-seat licenses bind the first fingerprint seen (trust on first use);
 * multi-seat ones activate machines up to max_machines (0 = unlimited).
 */
import { randomUUID } from 'node:crypto'
import type { MachineResponse, MachineView } from '../contract/licensing'
import { ApiError } from '../contract/errors'
import type { Clock } from '../lib/clock'
import { RateLimiter } from '../lib/rateLimit'
import type { AuditLog } from './audit'
import { immediate, type LicensingDb } from './db'
import { hashFingerprint } from './keys/keyFormat'
import type { LicenseKeys } from './licenseKeys'
import { expiryOf, machineView, type ClientInfo, type LicenseRow, type MachineRow } from './licenseRecords'
import { emitEvent } from './outboundEvents'
import type { EventOutbox } from './settlement'
import type { ValidationKind } from './validationLog'

/** Validate refreshes a machine's last-seen time at most this often (the heartbeat endpoint always does). */
const HEARTBEAT_WRITE_MS = 60_000

export type Seat =
  | { ok: true; machineId: string; created: boolean }
  | { ok: false; reason: 'fingerprint_mismatch' | 'too_many_machines' }

export interface SeatMeta {
  hostname?: string | null
  platform?: string | null
  ip?: string | null
}

export interface MachineSeatDeps {
  db: LicensingDb
  clock: Clock
  audit: AuditLog
  outbox: EventOutbox
  keys: LicenseKeys
  /** Heartbeats allowed per license per minute (a burst of as many, then one per 60/n seconds). */
  heartbeatsPerMinute?: number
}

export class MachineSeats {
  private readonly q
  private readonly heartbeats: RateLimiter

  constructor(private readonly deps: MachineSeatDeps) {
    const perMinute = deps.heartbeatsPerMinute ?? 60
    this.heartbeats = new RateLimiter({
      capacity: perMinute,
      refillPerSecond: perMinute / 60,
      clock: deps.clock,
      maxKeys: 100_000,
    })
    const db = deps.db
    // Validate takes seats on its hot path: prepared statements.
    this.q = {
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

  private activeCount(licenseId: string): number {
    return this.q.activeCount.get(licenseId) as number
  }

  private active(licenseId: string, fpHash: string): MachineRow | undefined {
    return this.q.machineByFp.get(licenseId, fpHash) as MachineRow | undefined
  }

  /**
   * Takes or refreshes a seat for a fingerprint hash. Single-seat licenses bind the first
   * fingerprint (TOFU) and refuse others; multi-seat ones activate up to the limit.
   */
  seat(r: LicenseRow, fpHash: string, meta: SeatMeta): Seat {
    const now = this.deps.clock.now()
    // A machine that checked in within the last minute needs no write: validate stays read-only for it.
    const seen = this.active(r.id, fpHash)
    if (seen && now - seen.last_heartbeat_at < HEARTBEAT_WRITE_MS)
      return { ok: true, machineId: seen.id, created: false }
    return immediate(this.deps.db, (): Seat => {
      const existing = this.active(r.id, fpHash)
      const current = this.deps.keys.row(r.id)!
      if (current.max_machines === 1 && current.fingerprint_hash !== null && current.fingerprint_hash !== fpHash)
        return { ok: false, reason: 'fingerprint_mismatch' }
      if (existing) {
        this.q.heartbeat.run(now, meta.ip ?? null, existing.id)
        return { ok: true, machineId: existing.id, created: false }
      }
      if (current.max_machines > 0 && this.activeCount(r.id) >= current.max_machines) {
        return { ok: false, reason: current.max_machines === 1 ? 'fingerprint_mismatch' : 'too_many_machines' }
      }
      return { ok: true, machineId: this.insert(current, fpHash, meta, now), created: true }
    })
  }

  /** A new active machine (inside seat's transaction); a single-seat license binds its fingerprint. */
  private insert(r: LicenseRow, fpHash: string, meta: SeatMeta, now: number): string {
    const id = randomUUID()
    const hostname = meta.hostname ?? null
    const platform = meta.platform ?? null
    this.q.insertMachine.run(id, r.id, fpHash, hostname, platform, meta.ip ?? null, now, now)
    if (r.max_machines === 1) this.q.bind.run(fpHash, now, r.id)
    this.deps.audit.record({
      actor: 'buyer',
      action: 'machine.activate',
      targetType: 'machine',
      targetId: id,
      details: { license_id: r.id },
    })
    emitEvent(this.deps.outbox, 'machine.activated', { machine_id: id, license_id: r.id, hostname, platform }, now)
    return id
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
    const k = this.deps.keys.check(a.key)
    if (!k.ok) {
      this.deps.keys.report(kind, a.key, null, k, fpHash, client)
      throw new ApiError('unauthorized', 'invalid license key')
    }
    const res = run(k.license, fpHash)
    this.deps.keys.report(kind, a.key, k.license.id, res, fpHash, client)
    return res
  }

  activate(
    a: { key: string; fingerprint: string; hostname?: string | null; platform?: string | null },
    client: ClientInfo = {},
  ): MachineResponse {
    return this.machineCall('activate', a, client, (r, fpHash) => {
      if (r.status !== 'active') return { ok: false, reason: r.status, active_count: 0, max_machines: r.max_machines }
      if (expiryOf(r, this.deps.clock.now()).expired)
        return { ok: false, reason: 'expired', max_machines: r.max_machines }
      const s = this.seat(r, fpHash, { hostname: a.hostname, platform: a.platform, ip: client.ip })
      const count = this.activeCount(r.id)
      if (!s.ok) return { ok: false, reason: s.reason, active_count: count, max_machines: r.max_machines }
      return { ok: true, machine_id: s.machineId, active_count: count, max_machines: r.max_machines }
    })
  }

  heartbeat(a: { key: string; fingerprint: string }, client: ClientInfo = {}): MachineResponse {
    return this.machineCall('heartbeat', a, client, (r, fpHash) => {
      if (r.status !== 'active') return { ok: false, reason: r.status }
      // Keysat's answer to a client heartbeating too often: a 200 the SDKs read as a refusal, not an error.
      if (!this.heartbeats.take(r.id)) return { ok: false, reason: 'rate_limited' }
      const m = this.active(r.id, fpHash)
      if (!m) return { ok: false, reason: 'not_activated' }
      this.q.heartbeat.run(this.deps.clock.now(), client.ip ?? null, m.id)
      return { ok: true, machine_id: m.id }
    })
  }

  deactivate(
    a: { key: string; fingerprint: string; reason?: string | null },
    client: ClientInfo = {},
  ): MachineResponse {
    return this.machineCall('deactivate', a, client, (r, fpHash) => {
      const m = this.active(r.id, fpHash)
      if (!m) return { ok: false, reason: 'not_found' }
      this.deactivateMachine(m.id, a.reason ?? 'client_requested', 'buyer')
      return { ok: true, machine_id: m.id, active_count: this.activeCount(r.id), max_machines: r.max_machines }
    })
  }

  deactivateMachine(id: string, reason: string | null | undefined, actor: 'admin' | 'buyer' = 'admin'): MachineView {
    const { db, clock } = this.deps
    const m = db.prepare('SELECT * FROM machines WHERE id = ?').get(id) as MachineRow | undefined
    if (!m) throw new ApiError('not_found', `no machine ${id}`)
    if (m.status !== 'active') throw new ApiError('conflict', 'the machine is already inactive')
    const why = reason ?? (actor === 'admin' ? 'admin deactivate' : 'client_requested')
    db.transaction(() => {
      this.q.deactivate.run(clock.now(), why, id)
      // A single-seat license forgets its bound fingerprint so the next machine can bind.
      db.prepare(
        `UPDATE licenses SET fingerprint_hash = NULL, updated_at = ? WHERE id = ? AND max_machines = 1 AND fingerprint_hash = ?`,
      ).run(clock.now(), m.license_id, m.fingerprint_hash)
      this.deps.audit.record({
        actor,
        action: 'machine.deactivate',
        targetType: 'machine',
        targetId: id,
        details: { license_id: m.license_id, reason: why },
      })
      const data = { machine_id: id, license_id: m.license_id, reason: why, actor }
      emitEvent(this.deps.outbox, 'machine.deactivated', data, clock.now())
    })()
    return machineView(db, id)
  }
}
