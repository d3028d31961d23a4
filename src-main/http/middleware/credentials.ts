import type { Request, RequestHandler } from 'express'
import { ApiError } from '../../contract/errors'
import type { Credentials } from '../../core/credentials'
import type { SessionStore } from '../../core/sessions'
import type { ConsumerIdentity } from '../../gateway/consumerKeys'
import { sendError } from '../respond'
import { requestState, styleFor } from '../requestState'
import { readCookie, SESSION_COOKIE } from '../session'

const OPEN: ConsumerIdentity = { kind: 'open' }
const ADMIN: ConsumerIdentity = { kind: 'admin' }

function bearer(req: Request): string | undefined {
  const h = req.headers.authorization
  if (!h) return undefined
  const m = /^Bearer\s+(.+)$/i.exec(h)
  return m?.[1]?.trim()
}

/**
 * Credentials per surface: the control API and `/v1/admin/*` need the admin session or token;
 * the consumer surface needs a consumer key when keys are configured. A wrong Bearer counts
 * against the address's credential limiter, and an address that has used it up is refused on
 * every credentialed surface until it refills.
 */
export function credentialsGate(credentials: Credentials, sessions: SessionStore): RequestHandler {
  return (req, res, next) => {
    const st = requestState(res)
    let admin: boolean | undefined
    st.isAdmin = () => {
      if (admin === undefined) {
        const token = bearer(req)
        admin =
          sessions.verify(readCookie(req.headers.cookie, SESSION_COOKIE)) ||
          (token !== undefined && credentials.isAdminToken(token))
      }
      return admin
    }
    const needsAdmin = st.surface === 'control' || st.surface === 'licensing-admin'
    const needsConsumer = st.surface === 'consumer' && credentials.consumerKeysRequired
    const needsMetrics = st.surface === 'metrics'
    if (st.surface === 'consumer') st.consumer = needsConsumer ? undefined : OPEN
    if (!needsAdmin && !needsConsumer && !needsMetrics) return next()
    const style = styleFor(st.surface, req.path)
    const locked = credentials.lockout(st.client.limitKey)
    if (locked) return sendError(res, locked, style)
    if (st.isAdmin()) {
      // The admin is never held to a key's limits.
      if (needsConsumer) st.consumer = ADMIN
      return next()
    }
    const token = bearer(req)
    if (needsMetrics && token !== undefined && credentials.isMetricsToken(token)) return next()
    const who = needsConsumer && token !== undefined ? credentials.consumerIdentity(token) : null
    if (who) {
      // A named key's own limits (rate, concurrent requests); the slot is freed when the exchange ends.
      try {
        res.once('close', credentials.admitConsumer(who))
      } catch (err) {
        return sendError(res, err, style)
      }
      st.consumer = who
      return next()
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
    sendError(res, new ApiError('unauthorized', message), style)
  }
}
