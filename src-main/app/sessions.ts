import { createHash, randomBytes } from 'node:crypto'
import { z } from 'zod'
import type { Clock } from '../lib/clock'
import { atomicWriteFile, readStateFile, replacedStateFileMessage } from '../lib/files'
import type { Logger } from '../lib/logger'

const SESSION_TTL_MS = 12 * 60 * 60 * 1000
/** More live sessions than any operator has browsers; the oldest go first. */
const MAX_SESSIONS = 500

const StoreFile = z.object({
  version: z.literal(1),
  /** Which admin token the sessions were issued under: a rotated token ends them all. */
  token_fingerprint: z.string(),
  /** SHA-256 of each session id → its expiry (epoch ms). */
  sessions: z.record(z.string().regex(/^[0-9a-f]{64}$/), z.number()),
})

const digest = (s: string): string => createHash('sha256').update(s).digest('hex')

/**
 * Admin sessions kept server-side in `DATA_DIR/sessions.json` (mode 0600), so logout and token
 * rotation survive a restart. The cookie carries a random id; the file holds only its hash, so a
 * copy of the file opens no session. Expired sessions are reaped whenever the file is written.
 */
export class SessionStore {
  private readonly sessions = new Map<string, number>()
  /** Null while the admin-token file is rejected: no session is kept or issued then. */
  private readonly tokenFingerprint: string | null
  /** The last write of the file failed: sessions are in memory only. */
  private memoryOnly = false

  constructor(private readonly opts: { file: string; adminToken: string | null; clock: Clock; logger: Logger }) {
    this.tokenFingerprint = opts.adminToken === null ? null : digest(`tandem-session-v2:${opts.adminToken}`)
    // The file is left as it is for when a valid token is back; no session opens meanwhile.
    if (this.tokenFingerprint === null) return
    const read = readStateFile(opts.file, (text) => StoreFile.parse(JSON.parse(text)), opts.clock.now())
    if (read.kind === 'corrupt')
      opts.logger.warn(replacedStateFileMessage('session store', opts.file, read, 'every admin session ends'))
    if (read.kind !== 'ok' || read.value.token_fingerprint !== this.tokenFingerprint) return
    const now = opts.clock.now()
    for (const [id, exp] of Object.entries(read.value.sessions)) if (exp > now) this.sessions.set(id, exp)
  }

  issue(): { value: string; maxAgeS: number } {
    if (this.tokenFingerprint === null) throw new Error('no admin session without a valid admin token')
    const value = randomBytes(32).toString('base64url')
    this.sessions.set(digest(value), this.opts.clock.now() + SESSION_TTL_MS)
    while (this.sessions.size > MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value as string)
    this.persist()
    return { value, maxAgeS: SESSION_TTL_MS / 1000 }
  }

  verify(value: string | undefined): boolean {
    if (!value || value.length > 128) return false
    const exp = this.sessions.get(digest(value))
    return exp !== undefined && exp > this.opts.clock.now()
  }

  revoke(value: string | undefined): void {
    if (!value || !this.sessions.delete(digest(value))) return
    this.persist()
  }

  private persist(): void {
    const now = this.opts.clock.now()
    for (const [id, exp] of this.sessions) if (exp <= now) this.sessions.delete(id)
    const body = { version: 1, token_fingerprint: this.tokenFingerprint, sessions: Object.fromEntries(this.sessions) }
    // A full disk must not lock the operator out: sessions live on in memory (lost on restart),
    // logged once per outage rather than per login.
    try {
      atomicWriteFile(this.opts.file, JSON.stringify(body), { mode: 0o600, role: 'admin sessions' })
    } catch (err) {
      if (!this.memoryOnly)
        this.opts.logger.warn('sessions.json cannot be written; sessions are kept in memory until it can', {
          error: (err as Error).message,
          effect: 'logins work; a restart ends them',
        })
      this.memoryOnly = true
      return
    }
    if (this.memoryOnly) this.opts.logger.info('sessions.json is written again')
    this.memoryOnly = false
  }
}
