import type { IncomingMessage, ServerResponse } from 'node:http'
import type { ErrorStyle } from '../contract/define'
import { ApiError } from '../contract/errors'
import { requestState, styleFor } from './requestState'
import { sendError } from './respond'

/**
 * The deadline for receiving a request body. Node's own `requestTimeout` is server-wide, and upload
 * routes may take hours on a slow link, so the server arms this per request and an upload route
 * replaces it with its idle timeout (`releaseBodyDeadline`). Only receiving is bounded: a proxied
 * generation may stream its answer for as long as it needs. One plain timer per request, cleared
 * when the body has been read or the request is gone.
 */
interface BodyDeadline {
  /** Null once released: the request's listeners stay, so arming again adds none. */
  timer: NodeJS.Timeout | null
  /** When the timer fires (performance.now() milliseconds). */
  dueAt: number
}
const waiting = new WeakMap<IncomingMessage, BodyDeadline>()

export function armBodyDeadline(req: IncomingMessage, res: ServerResponse, ms: number): void {
  // A request that announces no body has nothing left to wait for once its headers are in.
  if (ms <= 0 || (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined)) return
  const dueAt = performance.now() + ms
  let deadline = waiting.get(req)
  if (deadline === undefined) {
    deadline = { timer: null, dueAt }
    waiting.set(req, deadline)
    req.once('end', onBodyDone)
    req.once('close', onBodyDone)
  } else if (deadline.timer !== null) {
    // Arming again never gives the body more time than it already had.
    if (deadline.dueAt <= dueAt) return
    clearTimeout(deadline.timer)
  }
  deadline.dueAt = dueAt
  deadline.timer = setTimeout(bodyDeadlinePassed, ms, req, res, ms)
  // A pending deadline does not keep the process alive on its own.
  deadline.timer.unref()
}

function bodyDeadlinePassed(req: IncomingMessage, res: ServerResponse, ms: number): void {
  releaseBodyDeadline(req)
  if (req.complete || req.socket.destroyed) return
  // In the shape of the surface the edge put the request on (OpenAI's error on /v1).
  const path = (req.url ?? '/').split('?', 1)[0]!
  answerUnfinished(req, res, bodyTimeout(ms), styleFor(requestState(res).surface, path))
}

/** The body was read to its end, or the request is gone. */
function onBodyDone(this: IncomingMessage): void {
  releaseBodyDeadline(this)
}

/** For upload routes, which bound their body by an idle timeout instead. */
export function releaseBodyDeadline(req: IncomingMessage): void {
  const deadline = waiting.get(req)
  if (deadline === undefined || deadline.timer === null) return
  clearTimeout(deadline.timer)
  deadline.timer = null
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
