import fs from 'node:fs'
import { randomBytes, timingSafeEqual, createHash } from 'node:crypto'
import { atomicWriteFile } from './files'

/**
 * The admin token: ADMIN_TOKEN when set, otherwise generated once into DATA_DIR/admin-token
 * (mode 0600) and reused on every start.
 */
export function ensureAdminToken(
  configured: string | null,
  file: string,
): { token: string; source: 'setting' | 'file' } {
  if (configured) return { token: configured, source: 'setting' }
  try {
    const existing = fs.readFileSync(file, 'utf8').trim()
    if (existing.length >= 16) {
      fs.chmodSync(file, 0o600)
      return { token: existing, source: 'file' }
    }
  } catch {
    // missing: generate below
  }
  return { token: writeNewAdminToken(file), source: 'file' }
}

/**
 * Replaces the generated token with a new one and ends every admin session (the session store
 * keeps only sessions issued under the current token). A running daemon keeps the token it read
 * at start until it restarts.
 */
export function rotateAdminToken(file: string, sessionsFile: string): string {
  const token = writeNewAdminToken(file)
  fs.rmSync(sessionsFile, { force: true })
  return token
}

function writeNewAdminToken(file: string): string {
  const token = randomBytes(24).toString('base64url')
  atomicWriteFile(file, token + '\n', { mode: 0o600 })
  return token
}

/** Constant-time comparison of two secrets of any length. */
export function secretEquals(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest()
  const hb = createHash('sha256').update(b).digest()
  return timingSafeEqual(ha, hb) && a.length === b.length
}
