/**
 * The validation log: every /v1/validate, activate, heartbeat and deactivate call with its result,
 * the license it resolved to (or a hash of the key when it resolved to none), the machine
 * fingerprint's hash, and the caller's address and user agent.
 *
 * Off the hot path: `record` only appends to a buffer; the buffer is written in batches (one
 * transaction each, with the per-day counts the Overview chart reads) when it fills or on a short
 * timer. A batch commits with synchronous=NORMAL, switched for that one transaction on the shared
 * connection, so no batch waits for an fsync: the log is diagnostics, not money, and the last
 * moments of it may be lost in a power cut (the database stays consistent; every other commit
 * keeps synchronous=FULL). The same connection, not a second one: a write from another connection
 * would empty this one's page cache and slow every validate after it. Retention by age and by row
 * count is enforced in small steps.
 */
import { createHash } from 'node:crypto'
import type { ValidationEntry, ValidationKind, ValidationRecording } from '../contract/licensing'
import type { Clock } from '../lib/clock'
import { sqliteOutOfSpace } from '../lib/files'
import type { Logger } from '../lib/logger'
import { equals, whereAll, type LicensingDb } from './db'

export type { ValidationKind }

/** One call as the buyer endpoints report it. */
export interface ValidationRecord {
  readonly kind: ValidationKind
  /** The license the key resolved to; null when it resolved to none. */
  readonly licenseId: string | null
  /** The key as sent: hashed (never stored) when no license was found, so repeated tries can be told apart. */
  readonly keyText: string
  readonly ok: boolean
  /** 'ok', or the refusal's reason. */
  readonly result: string
  readonly fingerprintHash: string | null
  readonly clientIp?: string | null
  readonly userAgent?: string | null
}

/** What the license service needs: somewhere to report each call. */
export interface ValidationRecorder {
  record(r: ValidationRecord): void
}

export interface ValidationLogOptions {
  readonly db: LicensingDb
  readonly clock: Clock
  readonly logger: Logger
  /** Rows older than this are removed; 0 keeps them whatever their age. */
  readonly retentionDays: number
  /** At most this many rows are kept (the oldest go first); 0 = no cap. */
  readonly maxRows: number
  /** A batch is written as soon as this many calls are waiting. */
  readonly batchSize?: number
  /** ...and at least this often. */
  readonly flushIntervalMs?: number
  /** Calls beyond this many waiting are dropped (and counted) rather than grow memory without bound. */
  readonly maxPending?: number
  /** Rows deleted per retention step. */
  readonly pruneChunk?: number
  /** Where the database lives: a failed batch is told apart as a full disk by its free space. */
  readonly dataDir?: string
}

interface Pending {
  at: number
  kind: ValidationKind
  licenseId: string | null
  keyHash: string | null
  ok: number
  result: string
  fingerprintHash: string | null
  clientIp: string | null
  userAgent: string | null
}

interface EntryRow {
  id: number
  at: number
  kind: ValidationKind
  license_id: string | null
  key_hash: string | null
  ok: number
  result: string
  fingerprint_hash: string | null
  client_ip: string | null
  user_agent: string | null
}

const DAY_MS = 86_400_000
/** Per-day counts outlive the rows: the Overview shows up to a year. */
const DAILY_KEEP_DAYS = 400
const PRUNE_EVERY_MS = 3_600_000
const USER_AGENT_MAX = 256

/** A key that resolved to no license, as the log names it: 128 bits of its SHA-256. */
export function keyHash(keyText: string): string {
  return createHash('sha256').update(keyText).digest('hex').slice(0, 32)
}

/** A header value fit for a log row: no control characters, bounded length. */
export function cleanUserAgent(ua: string | null | undefined): string | null {
  if (ua === undefined || ua === null) return null
  // eslint-disable-next-line no-control-regex
  const clean = ua.replace(/[\u0000-\u001f\u007f]/g, '').slice(0, USER_AGENT_MAX)
  return clean === '' ? null : clean
}

const dayOf = (at: number): string => new Date(at - (at % DAY_MS)).toISOString().slice(0, 10)

export class ValidationLog implements ValidationRecorder {
  private buffer: Pending[] = []
  private flushQueued = false
  private dropped = 0
  /** Calls never written (dropped behind, or in a batch the database refused), since the start. */
  private unrecorded = 0
  private unrecordedSince: number | null = null
  /** When batches began to fail (the disk full); null while they are written. */
  private outageSince: number | null = null
  private insertedSincePrune = 0
  private closed = false
  private timers: NodeJS.Timeout[] = []
  /** The connection's own synchronous level, restored after each batch. */
  private readonly synchronous: number
  private readonly batchSize: number
  private readonly maxPending: number
  private readonly pruneChunk: number
  private readonly w

  constructor(private readonly o: ValidationLogOptions) {
    this.batchSize = o.batchSize ?? 128
    this.maxPending = o.maxPending ?? 20_000
    this.pruneChunk = o.pruneChunk ?? 5_000
    this.synchronous = Number(o.db.pragma('synchronous', { simple: true }))
    const w = o.db
    this.w = {
      insert: w.prepare(
        `INSERT INTO validation_log (at, kind, license_id, key_hash, ok, result, fingerprint_hash, client_ip, user_agent)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      count: w.prepare(
        `INSERT INTO validation_daily (day, kind, result, count) VALUES (?, ?, ?, ?)
         ON CONFLICT (day, kind, result) DO UPDATE SET count = count + excluded.count`,
      ),
      oldestChunk: w.prepare(
        `DELETE FROM validation_log WHERE id IN (SELECT id FROM validation_log ORDER BY id LIMIT ?) AND at < ?`,
      ),
      bounds: w.prepare('SELECT min(id) AS lo, max(id) AS hi FROM validation_log'),
      upTo: w.prepare('DELETE FROM validation_log WHERE id <= ?'),
      oldDays: w.prepare('DELETE FROM validation_daily WHERE day < ?'),
    }
  }

  record(r: ValidationRecord): void {
    if (this.closed) return
    if (this.buffer.length >= this.maxPending) {
      this.dropped++
      return
    }
    this.buffer.push({
      at: this.o.clock.now(),
      kind: r.kind,
      licenseId: r.licenseId,
      keyHash: r.licenseId === null ? keyHash(r.keyText) : null,
      ok: r.ok ? 1 : 0,
      result: r.result,
      fingerprintHash: r.fingerprintHash,
      clientIp: r.clientIp ?? null,
      userAgent: cleanUserAgent(r.userAgent),
    })
    if (this.buffer.length >= this.batchSize && !this.flushQueued) {
      this.flushQueued = true
      setImmediate(() => {
        this.flushQueued = false
        this.flushAndPrune()
      })
    }
  }

  /** Calls waiting to be written. */
  pending(): number {
    return this.buffer.length
  }

  /** Writes every waiting call in one transaction; returns how many. A failed batch is logged and dropped. */
  flush(): number {
    if (this.closed || this.buffer.length === 0) return 0
    const batch = this.buffer
    this.buffer = []
    if (this.dropped > 0) {
      this.o.logger.warn('validation log fell behind; calls were not recorded', { dropped: this.dropped })
      this.lost(this.dropped)
      this.dropped = 0
    }
    const db = this.o.db
    try {
      db.pragma('synchronous = NORMAL')
      db.transaction(() => {
        const counts = new Map<string, { day: string; kind: string; result: string; n: number }>()
        for (const p of batch) {
          this.w.insert.run(
            p.at,
            p.kind,
            p.licenseId,
            p.keyHash,
            p.ok,
            p.result,
            p.fingerprintHash,
            p.clientIp,
            p.userAgent,
          )
          const day = dayOf(p.at)
          const k = `${day}\n${p.kind}\n${p.result}`
          const c = counts.get(k)
          if (c) c.n++
          else counts.set(k, { day, kind: p.kind, result: p.result, n: 1 })
        }
        for (const c of counts.values()) this.w.count.run(c.day, c.kind, c.result, c.n)
      })()
      db.pragma(`synchronous = ${this.synchronous}`)
    } catch (err) {
      db.pragma(`synchronous = ${this.synchronous}`)
      this.batchFailed(batch.length, err)
      return 0
    }
    if (this.outageSince !== null) {
      this.o.logger.info('validation log is written again', { unrecorded_calls: this.unrecorded })
      this.outageSince = null
    }
    this.insertedSincePrune += batch.length
    return batch.length
  }

  /** A batch the database refused is dropped and counted; logged once until a batch is written again. */
  private batchFailed(rows: number, err: unknown): void {
    this.lost(rows)
    if (this.outageSince !== null) return
    this.outageSince = this.o.clock.now()
    const full = sqliteOutOfSpace(err, this.o.dataDir)
    this.o.logger.error(
      full
        ? 'validation log: no space left for the database; calls are counted, not recorded, until it has room'
        : 'validation log batch could not be written; calls are counted, not recorded, until a batch is',
      { rows, error: err instanceof Error ? err.message : String(err) },
    )
  }

  private lost(n: number): void {
    this.unrecorded += n
    this.unrecordedSince ??= this.o.clock.now()
  }

  /** Whether calls are being recorded, and how many were not since the start (Settings shows it). */
  recording(): ValidationRecording {
    return {
      recording: this.outageSince === null,
      unrecorded_calls: this.unrecorded + this.dropped,
      unrecorded_since: this.unrecordedSince,
      failing_since: this.outageSince,
    }
  }

  /** One retention step: at most `pruneChunk` rows by age, then by count. Returns rows removed and whether more remain. */
  pruneStep(): { removed: number; more: boolean } {
    const chunk = this.pruneChunk
    let removed = 0
    if (this.o.retentionDays > 0) {
      const cutoff = this.o.clock.now() - this.o.retentionDays * DAY_MS
      removed = this.w.oldestChunk.run(chunk, cutoff).changes
      if (removed === chunk) return { removed, more: true }
    }
    if (this.o.maxRows > 0) {
      const b = this.w.bounds.get() as { lo: number | null; hi: number | null }
      if (b.lo !== null && b.hi !== null) {
        // Ids only grow, so everything at or below hi - maxRows is beyond the cap.
        const over = b.hi - this.o.maxRows
        if (over >= b.lo) {
          const n = this.w.upTo.run(Math.min(over, b.lo + chunk - 1)).changes
          return { removed: removed + n, more: over > b.lo + chunk - 1 }
        }
      }
    }
    return { removed, more: false }
  }

  /** Applies retention fully (tests, start-up); the background path goes step by step between requests. */
  prune(): number {
    let total = 0
    for (;;) {
      const s = this.pruneStep()
      total += s.removed
      if (!s.more) break
    }
    this.w.oldDays.run(dayOf(this.o.clock.now() - DAILY_KEEP_DAYS * DAY_MS))
    this.insertedSincePrune = 0
    return total
  }

  private pruneInBackground(): void {
    this.insertedSincePrune = 0
    const step = (): void => {
      if (this.closed) return
      try {
        if (this.pruneStep().more) setImmediate(step)
        else this.w.oldDays.run(dayOf(this.o.clock.now() - DAILY_KEEP_DAYS * DAY_MS))
      } catch (err) {
        this.o.logger.error('validation log retention failed', { error: err instanceof Error ? err.message : err })
      }
    }
    step()
  }

  private flushAndPrune(): void {
    this.flush()
    // Between hourly runs, the row cap is also checked after every tenth of it written.
    const every = this.o.maxRows > 0 ? Math.max(1_000, Math.floor(this.o.maxRows / 10)) : Infinity
    if (this.insertedSincePrune >= every) this.pruneInBackground()
  }

  /** Newest first; waiting calls are written first so the answer is complete. */
  list(q: {
    license_id?: string
    kind?: ValidationKind
    ok?: boolean
    limit: number
    before_id?: number
  }): ValidationEntry[] {
    this.flush()
    const { where, args } = whereAll([
      equals('license_id', q.license_id),
      equals('kind', q.kind),
      equals('ok', q.ok === undefined ? undefined : q.ok ? 1 : 0),
      q.before_id !== undefined && { sql: 'id < ?', args: [q.before_id] },
    ])
    const sql = `SELECT * FROM validation_log ${where} ORDER BY id DESC LIMIT ?`
    return (this.o.db.prepare(sql).all(...args, q.limit) as EntryRow[]).map((r) => ({ ...r, ok: r.ok === 1 }))
  }

  /** Calls per day by kind and result over the last `days` days (today included). */
  daily(days: number): {
    from_day: string
    to_day: string
    rows: { day: string; kind: ValidationKind; result: string; count: number }[]
  } {
    this.flush()
    const now = this.o.clock.now()
    const from = dayOf(now - (days - 1) * DAY_MS)
    const rows = this.o.db
      .prepare('SELECT day, kind, result, count FROM validation_daily WHERE day >= ? ORDER BY day, kind, result')
      .all(from) as { day: string; kind: ValidationKind; result: string; count: number }[]
    return { from_day: from, to_day: dayOf(now), rows }
  }

  /** Writes on a timer and applies retention hourly (and once now). */
  start(flushIntervalMs = this.o.flushIntervalMs ?? 250): void {
    if (this.timers.length > 0 || this.closed) return
    this.pruneInBackground()
    this.timers.push(setInterval(() => this.flushAndPrune(), flushIntervalMs).unref())
    this.timers.push(setInterval(() => this.pruneInBackground(), PRUNE_EVERY_MS).unref())
  }

  /** Writes what is waiting and stops; the connection is closed by its owner. */
  close(): void {
    if (this.closed) return
    for (const t of this.timers) clearInterval(t)
    this.timers = []
    this.flush()
    this.closed = true
  }
}
