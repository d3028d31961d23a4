import type http from 'node:http'
import { ApiError } from '../../contract/errors'
import type { ErrorStyle } from '../../contract/define'
import type { Logger } from '../../lib/logger'
import { ClientGone } from '../../http/body'
import { answerUnfinished, armBodyDeadline } from '../../http/bodyDeadline'
import { sendError } from '../../http/respond'
import { styleFor } from '../../http/requestState'
import { surfaceOf } from '../../http/surfaces'
import type { Exchange, RequestLog } from './requestLog'

/**
 * A gateway route outside the contract (proxies, uploads), on plain Node request and response;
 * `exchange` is its request-log entry.
 */
export type RawHandler = (req: http.IncomingMessage, res: http.ServerResponse, exchange: Exchange) => Promise<void>
export type RawRoute = (
  routePath: string,
  fn: RawHandler,
) => (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>

export interface RawRouteDeps {
  readonly log: RequestLog
  readonly logger: Logger
  /** How long a client refused mid-upload may go on sending before its connection is closed. */
  readonly drainMs: number
}

/** Wraps a raw route: request log, error bodies, and silence when the client already left. */
export function rawRoute(deps: RawRouteDeps): RawRoute {
  return (routePath, fn) => {
    // OpenAI's error shape on /v1, the control shape on /api/audio/*: known when the route is made.
    const style = styleFor(surfaceOf(routePath), routePath)
    return async (req, res) => {
      const exchange = deps.log.watch(req, res, routePath)
      try {
        await fn(req, res, exchange)
      } catch (err) {
        return answerFailure(deps, routePath, style, req, res, err)
      }
      if (!req.complete) armBodyDeadline(req, res, deps.drainMs)
    }
  }
}

/**
 * A gateway route's failure: nothing when the client already left, else the error in the route's
 * shape (logged when it is ours or a 5xx). A body still arriving after the answer (a refused or
 * relayed upload) is read and dropped by Node; closing at once could reset the connection before
 * the client reads the answer. A client that goes on sending for longer than `drainMs` is cut off.
 */
export function answerFailure(
  deps: { readonly logger: Logger; readonly drainMs: number },
  routePath: string,
  style: ErrorStyle,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  err: unknown,
): void {
  if (err instanceof ClientGone || res.destroyed) return
  if (!(err instanceof ApiError)) deps.logger.error(`${routePath} failed`, { error: err })
  else if (err.status >= 500) deps.logger.warn(`${routePath}: ${err.message}`)
  if (!req.complete && err instanceof ApiError && err.status === 408) answerUnfinished(req, res, err, style)
  else sendError(res, err, style)
  if (!req.complete) armBodyDeadline(req, res, deps.drainMs)
}
