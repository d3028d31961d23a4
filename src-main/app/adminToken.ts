import fs from 'node:fs'
import { randomBytes, timingSafeEqual, createHash } from 'node:crypto'
import { atomicWriteFile } from '../lib/files'
import type { Logger } from '../lib/logger'

/** Shortest admin token accepted from the file (a generated one has 32 characters). */
export const MIN_ADMIN_TOKEN_LENGTH = 16
/** Longest: a token is a header value, not a document. */
const MAX_ADMIN_TOKEN_LENGTH = 512
/** What an operator can set a new token with; every refusal names it. */
export const ADMIN_TOKEN_FIX = 'tandem admin-token --reset'

export type AdminToken =
  | { ok: true; token: string; source: 'setting' | 'file' }
  /** The file is there but unusable: no admin credential works until the operator sets a new one. */
  | { ok: false; file: string; reason: string }

/**
 * The admin token: ADMIN_TOKEN when set, otherwise DATA_DIR/admin-token, generated (mode 0600)
 * when it does not exist yet, a new install. A file that exists but is unusable is rejected, never
 * replaced: a token the operator wrote, or one a copy left world-readable, must not silently stop
 * working or be swapped for one they do not know.
 */
export function ensureAdminToken(configured: string | null, file: string): AdminToken {
  if (configured) return { ok: true, token: configured, source: 'setting' }
  let stat: fs.Stats
  try {
    stat = fs.statSync(file)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      return { ok: true, token: writeNewAdminToken(file), source: 'file' }
    return { ok: false, file, reason: `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})` }
  }
  const problem = fileProblem(file, stat)
  if (problem !== null) return { ok: false, file, reason: problem }
  let token: string
  try {
    token = fs.readFileSync(file, 'utf8').trim()
  } catch (err) {
    return { ok: false, file, reason: `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})` }
  }
  const invalid = tokenProblem(token)
  return invalid === null ? { ok: true, token, source: 'file' } : { ok: false, file, reason: invalid }
}

/** Why the file itself cannot hold the token (its type or mode), or null. */
function fileProblem(file: string, stat: fs.Stats): string | null {
  if (!stat.isFile()) return 'is not a regular file'
  // Windows has no Unix modes to check; the file sits in the user's own profile there.
  if (process.platform !== 'win32' && (stat.mode & 0o077) !== 0)
    return `is readable or writable by other users (mode ${(stat.mode & 0o777).toString(8).padStart(4, '0')}); it must be 0600 (chmod 600 ${file} if no one else could have read it)`
  return null
}

/** Why a token read from the file is unusable, or null. Never quotes the token. */
function tokenProblem(token: string): string | null {
  if (token === '') return 'is empty'
  if (!/^[\x21-\x7e]+$/.test(token))
    return 'holds characters other than printable ASCII (spaces, control or non-ASCII characters)'
  if (token.length < MIN_ADMIN_TOKEN_LENGTH)
    return `holds a token that is too short (${token.length} characters; at least ${MIN_ADMIN_TOKEN_LENGTH})`
  if (token.length > MAX_ADMIN_TOKEN_LENGTH)
    return `holds a token that is too long (${token.length} characters; at most ${MAX_ADMIN_TOKEN_LENGTH})`
  return null
}

/** The operator's line for a rejected file: what is wrong and how to set a new token. */
export function adminTokenRejection(rejected: { file: string; reason: string }): string {
  return (
    `the admin token file ${rejected.file} ${rejected.reason}, so no admin login or admin bearer token is accepted. ` +
    `Set a new token with \`${ADMIN_TOKEN_FIX}\` (or write one of at least ${MIN_ADMIN_TOKEN_LENGTH} printable characters ` +
    `to the file with mode 0600, or set ADMIN_TOKEN), then restart Tandem`
  )
}

/**
 * The token the daemon runs with. A rejected file is an error in the log (why, and how to set a new
 * token) and a null token: the daemon still starts, and refuses every admin call until then.
 */
export function loadAdminToken(
  configured: string | null,
  file: string,
  logger: Logger,
): { token: string | null; source: 'setting' | 'file' } {
  const res = ensureAdminToken(configured, file)
  if (res.ok) return res
  logger.error(adminTokenRejection(res))
  return { token: null, source: 'file' }
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
