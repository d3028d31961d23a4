import type { IncomingMessage } from 'node:http'
import { ApiError } from '../../contract/errors'
import type { Credentials } from '../../core/credentials'
import type { SessionStore } from '../../core/sessions'
import type { RequestState } from '../requestState'
import { readCookie, SESSION_COOKIE } from '../session'

function bearer(req: IncomingMessage): string | undefined {
  const h = req.headers.authorization
  if (!h) return undefined
  const m = /^Bearer\s+(.+)$/i.exec(h)
  return m?.[1]?.trim()
}

/**
 * Credentials per surface: the control API and `/v1/admin/*` need the admin session or token;
 * the consumer surface needs a consumer key when keys are configured. A wrong Bearer counts
 * against the address's credential limiter, and an address that has used it up is refused on
 * every credentialed surface until it refills. Null when the request may go on; the refusal otherwise.
 */
export function checkCredentials(
  credentials: Credentials,
  sessions: SessionStore,
  req: IncomingMessage,
  st: RequestState,
): ApiError | null {
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
  if (!needsAdmin && !needsConsumer) return null
  const locked = credentials.lockout(st.client.limitKey)
  if (locked) return locked
  if (st.isAdmin()) return null
  const token = bearer(req)
  if (needsConsumer && token !== undefined && credentials.isConsumerKey(token)) return null
  if (token !== undefined)
    credentials.failed(st.client.limitKey, needsAdmin ? 'admin bearer token' : 'consumer key', st.client.ip)
  const message = needsAdmin ? 'admin session or bearer token required' : 'a valid consumer API key is required'
  return new ApiError('unauthorized', message)
}
