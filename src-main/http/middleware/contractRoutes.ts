import type { IncomingMessage, ServerResponse } from 'node:http'
import type { RequestHandler } from 'express'
import type { CallContext } from '../../contract/define'
import { ApiError } from '../../contract/errors'
import type { Core } from '../../core/app'
import { invokeMethod, openStream, toPublicError } from '../../core/invoke'
import { readJsonBody } from '../body'
import { sendError, sendJson } from '../respond'
import { applyEdgeHeaders, isAdmin, requestState, styleFor } from '../requestState'
import { contractRouteTable, type RouteEntry } from '../routeTable'
import { clearSessionCookie, readCookie, SESSION_COOKIE, setSessionCookie } from '../session'
import { writeSse } from '../sse'
import { STATE_CHANGING } from './originGuard'

const JSON_LIMIT_BYTES = 1024 * 1024

/** The call context of one HTTP request: who, the abort signal (made on demand), the session cookie. */
function httpContext(core: Core, req: IncomingMessage, res: ServerResponse): CallContext {
  const st = requestState(res)
  let abort: AbortController | null = null
  return {
    via: 'http',
    clientIp: st.client.ip,
    limitKey: st.client.limitKey,
    userAgent: req.headers['user-agent'],
    setHeaders: (headers) => {
      // Held edge headers go first, so an answer's headers keep one order whichever way it was dispatched.
      applyEdgeHeaders(res)
      for (const [k, v] of Object.entries(headers)) res.setHeader(k, v)
    },
    // Made only when a handler asks: most calls finish before they could be abandoned.
    get signal() {
      if (!abort) {
        const controller = new AbortController()
        abort = controller
        // Only a caller that leaves before the answer is complete aborts the work.
        res.on('close', () => {
          if (!res.writableFinished) controller.abort()
        })
      }
      return abort.signal
    },
    session: {
      get authenticated() {
        return isAdmin(req, res)
      },
      begin: () => {
        const s = core.sessions.issue()
        applyEdgeHeaders(res)
        setSessionCookie(res, s.value, s.maxAgeS, core.clock.now(), st.client.secure)
      },
      end: () => {
        core.sessions.revoke(readCookie(req.headers.cookie, SESSION_COOKIE))
        applyEdgeHeaders(res)
        clearSessionCookie(res, st.client.secure)
      },
    },
  }
}

/**
 * A method's raw input over HTTP: the query (GET, DELETE), the JSON body (which must be an
 * object when present), and the path parameters, which nothing else can override.
 */
function rawInput(entry: RouteEntry, query: object, params: Record<string, string>, body: unknown): object {
  if (body !== undefined && (body === null || typeof body !== 'object' || Array.isArray(body)))
    throw new ApiError('bad_input', 'the body must be a JSON object')
  return {
    ...(entry.verb === 'GET' || entry.verb === 'DELETE' ? query : {}),
    ...(body as object | undefined),
    ...params,
  }
}

/**
 * Answers one contract call over HTTP, on Node's own request and response: the router's last step
 * (contractRoutes) and the fast path's contract routes (http/fastPath.ts) are both this.
 */
export type ContractServer = (
  entry: RouteEntry,
  params: Record<string, string>,
  query: object,
  req: IncomingMessage,
  res: ServerResponse,
) => Promise<void>

export function contractServer(core: Core): ContractServer {
  const logger = core.logger.child('http')
  return async (entry, params, query, req, res) => {
    const def = entry.def
    const style = def.errorStyle ?? 'control'
    const ctx = httpContext(core, req, res)
    try {
      const body = STATE_CHANGING.has(entry.verb)
        ? await readJsonBody(req, def.bodyLimit ?? JSON_LIMIT_BYTES)
        : undefined
      const raw = rawInput(entry, query, params, body)
      if (!def.stream) return sendJson(res, 200, await invokeMethod(core.dispatcher, entry.name, raw, ctx))
      const lastId = req.headers['last-event-id']
      if (typeof lastId === 'string' && /^\d+$/.test(lastId) && !('after' in raw)) Object.assign(raw, { after: lastId })
      const items = openStream(core.dispatcher, entry.name, raw, ctx)
      await writeSse(res, items, ctx.signal, (err) => toPublicError(err, logger))
    } catch (err) {
      if (def.badInputAnswer !== undefined && err instanceof ApiError && err.code === 'bad_input')
        return sendJson(res, 200, def.badInputAnswer)
      sendError(res, toPublicError(err, logger), style)
    }
  }
}

/** Contract methods over HTTP, dispatched from one precompiled route table. */
export function contractRoutes(core: Core): RequestHandler {
  const logger = core.logger.child('http')
  const routes = contractRouteTable()
  const serve = contractServer(core)
  return (req, res, next) => {
    let match
    try {
      match = routes.match(req.method, req.path)
    } catch (err) {
      return sendError(res, toPublicError(err, logger), styleFor(requestState(res).surface, req.path))
    }
    if (!match) return next()
    void serve(match.entry, match.params, req.query, req, res)
  }
}
