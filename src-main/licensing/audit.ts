/**
 * The licensing audit log: who did what to which record, when (injected clock), newest first.
 * Never put a secret in `details` (API keys, webhook secrets, private keys); as a second line of
 * defence, passwords inside URLs and credential-named fields are masked on the way in and out.
 * An admin or buyer action also records how it came (HTTP or the desktop window), and over HTTP the
 * client address and user agent, from the contract call in progress.
 */
import type { AuditEntry } from '../contract/licensing'
import type { Caller } from '../platform/callerScope'
import type { Clock } from '../lib/clock'
import { Redactor } from '../lib/logger'
import { equals, matchAny, whereAll, type LicensingDb } from './db'
import { cleanUserAgent } from './validationLog'

export type AuditActor = AuditEntry['actor']

/** No registered secrets: only the shape rules (URL credentials, credential-named fields). */
const scrub = new Redactor()

function scrubDetails(details: Record<string, unknown>): Record<string, unknown> {
  return scrub.redactFields(details) as Record<string, unknown>
}

export interface AuditRecord {
  actor: AuditActor
  action: string
  targetType?: string | null
  targetId?: string | null
  details?: Record<string, unknown>
}

interface AuditRow {
  id: number
  at: number
  actor: AuditActor
  action: string
  target_type: string | null
  target_id: string | null
  details: string
  via: 'http' | 'ipc' | null
  client_ip: string | null
  user_agent: string | null
}

export class AuditLog {
  private readonly insert
  constructor(
    private readonly db: LicensingDb,
    private readonly clock: Clock,
    /** The caller of the contract call in progress, if any (platform/callerScope.ts). */
    private readonly caller: () => Caller | undefined = () => undefined,
  ) {
    this.insert = db.prepare(
      `INSERT INTO audit_log (at, actor, action, target_type, target_id, details, via, client_ip, user_agent)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
  }

  record(r: AuditRecord): void {
    // System and provider entries come from workers and webhooks: whoever's call they ran inside is not their author.
    const c = r.actor === 'admin' || r.actor === 'buyer' ? this.caller() : undefined
    this.insert.run(
      this.clock.now(),
      r.actor,
      r.action,
      r.targetType ?? null,
      r.targetId ?? null,
      JSON.stringify(scrubDetails(r.details ?? {})),
      c?.via ?? null,
      c?.clientIp ?? null,
      // A user agent is the caller's text: passwords inside URLs are masked as in details.
      c?.userAgent ? cleanUserAgent(scrub.redact(c.userAgent)) : null,
    )
  }

  list(q: {
    limit: number
    offset?: number
    before_id?: number
    action?: string
    target_id?: string
    q?: string
    order?: 'asc' | 'desc'
  }): AuditEntry[] {
    const { where, args } = whereAll([
      q.before_id !== undefined && { sql: 'id < ?', args: [q.before_id] },
      equals('action', q.action),
      equals('target_id', q.target_id),
      matchAny(['action', 'actor', 'target_type', 'target_id', 'details'], q.q),
    ])
    const dir = q.order === 'asc' ? 'ASC' : 'DESC'
    const sql = `SELECT * FROM audit_log ${where} ORDER BY id ${dir} LIMIT ? OFFSET ?`
    const rows = this.db.prepare(sql).all(...args, q.limit, q.offset ?? 0) as AuditRow[]
    return rows.map((r) => ({ ...r, details: parseDetails(r.details) }))
  }
}

function parseDetails(text: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(text)
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? scrubDetails(v as Record<string, unknown>) : {}
  } catch {
    return {}
  }
}
