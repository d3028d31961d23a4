import type { IncomingMessage, ServerResponse } from 'node:http'
import { ApiError } from '../../contract/errors'
import type { Credentials } from '../../app/credentials'
import type { SessionStore } from '../../app/sessions'
import type { ConsumerIdentity } from '../../platform/callerIdentity'
import { isAdmin, type AdminCheck, type RequestState } from '../requestState'
import { readCookie, SESSION_COOKIE } from '../session'
import { isPlaygroundUpload, quotaSpentBy, type Surface } from '../surfaces'
import { isCrossOrigin } from './originGuard'

const OPEN: ConsumerIdentity = { kind: 'open' }
const ADMIN: ConsumerIdentity = { kind: 'admin' }

function bearer(req: IncomingMessage): string | undefined {
  const h = req.headers.authorization
  if (!h) return undefined
  const m = /^Bearer\s+(.+)$/i.exec(h)
  return m?.[1]?.trim()
}

/** The admin check every request shares: the session cookie, or the admin token as a Bearer. */
export function adminCheck(credentials: Credentials, sessions: SessionStore): AdminCheck {
  return (req) => {
    const token = bearer(req)
    return (
      sessions.verify(readCookie(req.headers.cookie, SESSION_COOKIE)) ||
      (token !== undefined && credentials.isAdminToken(token))
    )
  }
}

/** Whether the session cookie counts on the consumer surface for this request. */
export type ConsumerSessionCheck = (req: IncomingMessage, st: RequestState) => boolean

/**
 * The session cookie on the consumer surface, when PLAYGROUND_SESSION_UPLOADS is on: only on the
 * browser playground's upload route, and only from the dashboard's own page. The consumer surface
 * is not origin-guarded, and the cookie rides along with every request to this host, so it is no
 * credential anywhere else there.
 */
export function playgroundSessionCheck(sessions: SessionStore): ConsumerSessionCheck {
  return (req, st) =>
    isPlaygroundUpload(pathOf(req)) &&
    !isCrossOrigin(req, st.client.secure) &&
    sessions.verify(readCookie(req.headers.cookie, SESSION_COOKIE))
}

/** The request's path, without its query. */
function pathOf(req: IncomingMessage): string {
  return (req.url ?? '/').split('?', 1)[0]!
}

/** The credential a surface needs; null when it is open. */
type Need = 'admin' | 'consumer' | 'metrics'

function needOf(surface: Surface, consumerKeysRequired: boolean): Need | null {
  if (surface === 'control' || surface === 'licensing-admin') return 'admin'
  if (surface === 'metrics') return 'metrics'
  return surface === 'consumer' && consumerKeysRequired ? 'consumer' : null
}

const FAILED: Record<Need, 'admin bearer token' | 'consumer key' | 'metrics token'> = {
  admin: 'admin bearer token',
  consumer: 'consumer key',
  metrics: 'metrics token',
}

const REQUIRED: Record<Need, string> = {
  admin: 'admin session or bearer token required',
  consumer: 'a valid consumer API key is required',
  metrics: 'a METRICS_TOKEN bearer or the admin credential is required',
}

/** The consumer surface's 401 for a client outside the LAN while a tier sells access (issue 45). */
const SELLS_ACCESS =
  'this gateway sells access; requests from outside the local network need a key (Authorization: Bearer <key>)'

/**
 * A consumer request from outside the local network while a tier sells access: it needs a key even
 * where the LAN needs none. The address is the one the trusted-proxy rule gave (clientAddress.ts).
 */
function awayWhileSelling(credentials: Credentials, st: RequestState): boolean {
  return st.surface === 'consumer' && !st.client.onLan && credentials.sellsAccess()
}

/** One request as the steps of the check see it. */
interface Asked {
  readonly req: IncomingMessage
  readonly res: ServerResponse
  readonly st: RequestState
  readonly token: string | undefined
  /** From outside the LAN while a tier sells access. */
  readonly away: boolean
}

/**
 * The consumer surface's credentials: the admin token as a Bearer (the admin is never held to a
 * key's limits), the playground's session where allowed, or a consumer key, which is held to its
 * own rate and concurrency (the slot is freed when the response closes).
 */
function admitConsumer(credentials: Credentials, session: ConsumerSessionCheck | null, a: Asked): ApiError | boolean {
  if ((a.token !== undefined && credentials.isAdminToken(a.token)) || session?.(a.req, a.st) === true) {
    a.st.consumer = ADMIN
    return true
  }
  const who = a.token === undefined ? null : credentials.consumerIdentity(a.token)
  if (who === null) return false
  return holdTo(credentials, a, who) ?? true
}

/** Lets the request run as `who`, held to its limits until the response closes; the refusal otherwise. */
function holdTo(credentials: Credentials, a: Asked, who: ConsumerIdentity): ApiError | null {
  try {
    a.res.once('close', credentials.admitConsumer(who, quotaSpentBy(pathOf(a.req))))
  } catch (err) {
    if (err instanceof ApiError) return err
    throw err
  }
  a.st.consumer = who
  return null
}

/**
 * On an open consumer surface (no key needed here), a named key that comes anyway is still held to
 * its limits and counted: a buyer's key on the LAN spends its own quota. A `tdm_…` secret that is
 * no key now (rotated, deleted, disabled, expired) is refused as anywhere else; any other bearer
 * (an OpenAI client's placeholder) is ignored, as on any open gateway.
 */
function admitOfferedKey(credentials: Credentials, a: Asked): ApiError | null {
  if (a.token === undefined) return null
  const who = credentials.consumerIdentity(a.token)
  if (who?.kind === 'key') return holdTo(credentials, a, who)
  return credentials.claimsNamedKey(a.token) ? refuse('consumer', credentials, a) : null
}

/** True when the request carries a valid credential for `need`; a key over its own limits is its 429. */
function admitValid(
  need: Need,
  credentials: Credentials,
  session: ConsumerSessionCheck | null,
  a: Asked,
): ApiError | boolean {
  if (need === 'consumer') return admitConsumer(credentials, session, a)
  if (isAdmin(a.req, a.res)) return true
  return need === 'metrics' && a.token !== undefined && credentials.isMetricsToken(a.token)
}

/** No valid credential: 429 while the address is locked out, else 401; a wrong Bearer spends the limiter. */
function refuse(need: Need, credentials: Credentials, a: Asked): ApiError {
  // A rejected admin-token file: nothing to guess, so nothing is counted; the 401 says why.
  const unavailable = need === 'admin' ? credentials.adminUnavailable() : null
  if (unavailable) return unavailable
  const locked = credentials.lockout(a.st.client.limitKey)
  if (locked) return locked
  if (a.token !== undefined) credentials.failed(a.st.client.limitKey, FAILED[need], a.st.client.ip)
  return new ApiError('unauthorized', need === 'consumer' && a.away ? SELLS_ACCESS : REQUIRED[need])
}

/**
 * Credentials per surface: the control API and `/v1/admin/*` need the admin session or token;
 * the consumer surface needs a consumer key (or the admin token as a Bearer) when keys exist, and
 * from outside the LAN while a tier sells access;
 * `/metrics` needs the metrics token or the admin credential. A valid credential is checked first
 * and admitted even while its address is locked out, so failures from a shared address (a LAN's
 * IPv6 /64, an untrusted proxy) cannot lock the operator out; only failures meet the limiter. A
 * wrong Bearer counts against the address's credential limiter, and an address that has used it
 * up gets 429 for every failure until it refills. Null when the request may go on; the refusal
 * otherwise.
 */
export function checkCredentials(
  credentials: Credentials,
  admin: AdminCheck,
  req: IncomingMessage,
  res: ServerResponse,
  st: RequestState,
  consumerSession: ConsumerSessionCheck | null = null,
): ApiError | null {
  st.adminCheck = admin
  const away = awayWhileSelling(credentials, st)
  const need = needOf(st.surface, credentials.consumerKeysRequired || away)
  if (st.surface === 'consumer') st.consumer = need === null ? OPEN : undefined
  const asked: Asked = { req, res, st, token: bearer(req), away }
  if (need === null) return st.surface === 'consumer' ? admitOfferedKey(credentials, asked) : null
  const admitted = admitValid(need, credentials, consumerSession, asked)
  if (admitted === true) return null
  return admitted === false ? refuse(need, credentials, asked) : admitted
}
