import type { Request, RequestHandler } from 'express'
import { ApiError } from '../../contract/errors'
import type { Credentials } from '../../core/credentials'
import type { SessionStore } from '../../core/sessions'
import { sendError } from '../respond'
import { requestState, styleFor } from '../requestState'
import { readCookie, SESSION_COOKIE } from '../session'

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
    if (!needsAdmin && !needsConsumer) return next()
    const style = styleFor(st.surface, req.path)
    const locked = credentials.lockout(st.client.limitKey)
    if (locked) return sendError(res, locked, style)
    if (st.isAdmin()) return next()
    const token = bearer(req)
    if (needsConsumer && token !== undefined && credentials.isConsumerKey(token)) return next()
    if (token !== undefined)
      credentials.failed(st.client.limitKey, needsAdmin ? 'admin bearer token' : 'consumer key', st.client.ip)
    const message = needsAdmin ? 'admin session or bearer token required' : 'a valid consumer API key is required'
    sendError(res, new ApiError('unauthorized', message), style)
  }
}
