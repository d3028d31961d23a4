import type { Request, RequestHandler } from 'express'
import { ApiError } from '../../contract/errors'
import { sendError } from '../respond'
import { requestState } from '../requestState'
import { isOriginGuarded } from '../surfaces'

export const STATE_CHANGING: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/** True when a request comes from a page on another origin. */
export function isCrossOrigin(req: Request): boolean {
  const host = req.headers.host
  const origin = req.headers.origin ?? req.headers.referer
  if (origin === undefined) return false // not a browser form/fetch: API clients send neither
  if (origin === 'null') return true
  try {
    return new URL(origin).host !== host
  } catch {
    return true
  }
}

/** Same-origin guard: a page on another origin must not drive the operator's session (spec 1, 5.2). */
export function originGuard(): RequestHandler {
  return (req, res, next) => {
    if (isOriginGuarded(requestState(res).surface) && STATE_CHANGING.has(req.method) && isCrossOrigin(req))
      return sendError(res, new ApiError('forbidden', 'cross-origin request refused'), 'control')
    next()
  }
}
