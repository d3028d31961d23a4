import type { IncomingMessage, ServerResponse } from 'node:http'
import { ApiError } from '../../contract/errors'
import type { Credentials } from '../../core/credentials'
import type { SessionStore } from '../../core/sessions'
import type { ConsumerIdentity } from '../../gateway/consumerKeys'
import { isAdmin, type AdminCheck, type RequestState } from '../requestState'
import { readCookie, SESSION_COOKIE } from '../session'

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

/**
 * Credentials per surface: the control API and `/v1/admin/*` need the admin session or token;
 * the consumer surface needs a consumer key when keys exist; `/metrics` needs the metrics token
 * or the admin credential. A wrong Bearer counts against the address's credential limiter, and an
 * address that has used it up is refused on every credentialed surface until it refills. A named
 * consumer key is also held to its own rate and concurrency (the slot is freed when the response
 * closes). Null when the request may go on; the refusal otherwise.
 */
export function checkCredentials(
  credentials: Credentials,
  admin: AdminCheck,
  req: IncomingMessage,
  res: ServerResponse,
  st: RequestState,
): ApiError | null {
  st.adminCheck = admin
  const needsAdmin = st.surface === 'control' || st.surface === 'licensing-admin'
  const needsConsumer = st.surface === 'consumer' && credentials.consumerKeysRequired
  const needsMetrics = st.surface === 'metrics'
  if (st.surface === 'consumer') st.consumer = needsConsumer ? undefined : OPEN
  if (!needsAdmin && !needsConsumer && !needsMetrics) return null
  const locked = credentials.lockout(st.client.limitKey)
  if (locked) return locked
  if (isAdmin(req, res)) {
    // The admin is never held to a key's limits.
    if (needsConsumer) st.consumer = ADMIN
    return null
  }
  const token = bearer(req)
  if (needsMetrics && token !== undefined && credentials.isMetricsToken(token)) return null
  const who = needsConsumer && token !== undefined ? credentials.consumerIdentity(token) : null
  if (who) {
    try {
      res.once('close', credentials.admitConsumer(who))
    } catch (err) {
      if (err instanceof ApiError) return err
      throw err
    }
    st.consumer = who
    return null
  }
  if (token !== undefined)
    credentials.failed(
      st.client.limitKey,
      needsAdmin ? 'admin bearer token' : needsMetrics ? 'metrics token' : 'consumer key',
      st.client.ip,
    )
  const message = needsAdmin
    ? 'admin session or bearer token required'
    : needsMetrics
      ? 'a METRICS_TOKEN bearer or the admin credential is required'
      : 'a valid consumer API key is required'
  return new ApiError('unauthorized', message)
}
