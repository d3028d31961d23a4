import type { IncomingMessage, ServerResponse } from 'node:http'
import type { ErrorStyle } from '../contract/define'
import { ApiError } from '../contract/errors'
import { Deadlines, type Deadline } from '../core/deadlines'
import { applyEdgeHeaders } from './requestState'
import { sendError } from './respond'

/**
 * The deadline for receiving a request body. Node's own `requestTimeout` is server-wide, and upload
 * routes may take hours on a slow link, so the server arms this per request and an upload route
 * replaces it with its idle timeout (`releaseBodyDeadline`). Only receiving is bounded: a proxied
 * generation may stream its answer for as long as it needs. The deadlines share lists and timers
 * (core/deadlines.ts): most requests end long before theirs.
 */
const bodyDeadlines = new Deadlines<ServerResponse>((res, ms) => {
  const req = res.req
  waiting.delete(req)
  if (req.complete || req.socket.destroyed) return
  answerUnfinished(req, res, bodyTimeout(ms))
})
const waiting = new WeakMap<IncomingMessage, Deadline<ServerResponse>>()

export function armBodyDeadline(req: IncomingMessage, res: ServerResponse, ms: number): void {
  // A request that announces no body has nothing left to wait for once its headers are in.
  if (ms <= 0 || (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined)) return
  waiting.set(req, bodyDeadlines.start(res, ms))
  res.once('close', endBodyDeadline)
}

/** On the response's close. An answer sent before the body was read keeps the deadline: the rest must still arrive in time. */
function endBodyDeadline(this: ServerResponse): void {
  if (this.req.complete) releaseBodyDeadline(this.req)
}

/** For upload routes, which bound their body by an idle timeout instead. */
export function releaseBodyDeadline(req: IncomingMessage): void {
  const deadline = waiting.get(req)
  if (deadline === undefined) return
  deadline.cancel()
  waiting.delete(req)
}

/**
 * Answers a request whose body is still arriving and closes the connection after the answer, so
 * the rest of the body is never waited for. Once an answer has begun, the connection is cut.
 */
export function answerUnfinished(
  req: IncomingMessage,
  res: ServerResponse,
  err: ApiError,
  style: ErrorStyle = 'control',
): void {
  if (res.headersSent) {
    req.socket.destroy()
    return
  }
  applyEdgeHeaders(res)
  res.setHeader('Connection', 'close')
  sendError(res, err, style)
}

/** The 408 for a body that did not arrive within `ms`. */
export function bodyTimeout(ms: number): ApiError {
  return new ApiError('request_timeout', `the request body did not arrive within ${formatSeconds(ms)}`, { status: 408 })
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`
}
