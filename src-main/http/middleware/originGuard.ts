import type { IncomingMessage } from 'node:http'
import type { RequestHandler } from 'express'
import { ApiError } from '../../contract/errors'
import { sendError } from '../respond'
import { requestState } from '../requestState'
import { isOriginGuarded } from '../surfaces'

export const STATE_CHANGING: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/**
 * The origin a page of this daemon has: the scheme it is reached by (https when the connection is
 * TLS or a trusted proxy says so), and the Host the browser asked for. Null without a Host.
 */
function ownOrigin(req: IncomingMessage, secure: boolean): string | null {
  const host = req.headers.host
  if (host === undefined || host === '') return null
  try {
    return new URL(`${secure ? 'https' : 'http'}://${host}`).origin
  } catch {
    return null
  }
}

/**
 * True when a request comes from a page on another origin: scheme, host and port must all match
 * (an https page is another origin than the http daemon it names).
 */
export function isCrossOrigin(req: IncomingMessage, secure: boolean): boolean {
  const origin = req.headers.origin ?? req.headers.referer
  if (origin === undefined) return false // not a browser form/fetch: API clients send neither
  if (origin === 'null') return true
  const own = ownOrigin(req, secure)
  try {
    return own === null || new URL(origin).origin !== own
  } catch {
    return true
  }
}

/** The 403, with a hint when only the scheme differs: a TLS proxy Tandem does not trust. */
function crossOriginRefusal(req: IncomingMessage, secure: boolean): ApiError {
  const other = ownOrigin(req, !secure)
  const origin = req.headers.origin ?? req.headers.referer ?? ''
  const onlyScheme = other !== null && URL.canParse(origin) && new URL(origin).origin === other
  return new ApiError(
    'forbidden',
    onlyScheme && !secure
      ? 'cross-origin request refused: the page is https but Tandem was reached over http; behind a TLS proxy, set TRUSTED_PROXIES to its address'
      : 'cross-origin request refused',
  )
}

/** Same-origin guard: a page on another origin must not drive the operator's session (spec 1, 5.2). */
export function originGuard(): RequestHandler {
  return (req, res, next) => {
    const st = requestState(res)
    if (isOriginGuarded(st.surface) && STATE_CHANGING.has(req.method) && isCrossOrigin(req, st.client.secure))
      return sendError(res, crossOriginRefusal(req, st.client.secure), 'control')
    next()
  }
}
