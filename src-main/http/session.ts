import { createHmac, randomBytes } from 'node:crypto'
import { secretEquals } from '../core/adminToken'
import type { Clock } from '../core/clock'

export const SESSION_COOKIE = 'tandem_session'
const SESSION_TTL_MS = 12 * 60 * 60 * 1000

/**
 * Signed, expiring admin sessions. The cookie is `v1.<expiry>.<nonce>.<hmac>`; the signing key
 * is derived from the admin token, so rotating the token ends every session. Logout revokes the
 * nonce so a copied cookie stops working too.
 */
export class SessionSigner {
  private readonly key: Buffer
  private readonly revoked = new Map<string, number>()

  constructor(
    adminToken: string,
    private readonly clock: Clock,
  ) {
    this.key = createHmac('sha256', 'tandem-session-v1').update(adminToken).digest()
  }

  issue(): { value: string; maxAgeS: number } {
    const exp = this.clock.now() + SESSION_TTL_MS
    const nonce = randomBytes(16).toString('base64url')
    const body = `v1.${exp}.${nonce}`
    return { value: `${body}.${this.sign(body)}`, maxAgeS: SESSION_TTL_MS / 1000 }
  }

  verify(value: string | undefined): boolean {
    if (!value) return false
    const parts = value.split('.')
    if (parts.length !== 4 || parts[0] !== 'v1') return false
    const [, expRaw, nonce, sig] = parts as [string, string, string, string]
    const body = `v1.${expRaw}.${nonce}`
    if (!secretEquals(sig, this.sign(body))) return false
    const exp = Number(expRaw)
    if (!Number.isFinite(exp) || exp <= this.clock.now()) return false
    return !this.revoked.has(nonce)
  }

  revoke(value: string | undefined): void {
    if (!value) return
    const parts = value.split('.')
    if (parts.length !== 4 || !this.verify(value)) return
    this.revoked.set(parts[2] as string, Number(parts[1]))
    const now = this.clock.now()
    for (const [n, exp] of this.revoked) if (exp <= now) this.revoked.delete(n)
  }

  private sign(body: string): string {
    return createHmac('sha256', this.key).update(body).digest('base64url')
  }
}

export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq < 0) continue
    if (part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim())
  }
  return undefined
}
