import type { Request, RequestHandler, Response } from 'express'
import { contract } from '../../contract'
import type { CallContext, MethodDef } from '../../contract/define'
import { ApiError } from '../../contract/errors'
import type { Core } from '../../core/app'
import { invokeMethod, openStream, toPublicError } from '../../core/invoke'
import { readJsonBody } from '../body'
import { sendError, sendJson } from '../respond'
import { isAdmin, requestState, styleFor } from '../requestState'
import { RouteTable, type RouteEntry } from '../routeTable'
import { readCookie, SESSION_COOKIE } from '../session'
import { writeSse } from '../sse'
import { STATE_CHANGING } from './originGuard'

const JSON_LIMIT_BYTES = 1024 * 1024

/** The call context of one HTTP request: who, the abort signal (made on demand), the session cookie. */
function httpContext(core: Core, req: Request, res: Response): CallContext {
  const st = requestState(res)
  let abort: AbortController | null = null
  return {
    via: 'http',
    clientIp: st.client.ip,
    limitKey: st.client.limitKey,
    userAgent: req.headers['user-agent'],
    setHeaders: (headers) => {
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
        res.cookie(SESSION_COOKIE, s.value, {
          httpOnly: true,
          sameSite: 'strict',
          path: '/',
          maxAge: s.maxAgeS * 1000,
          secure: st.client.secure,
        })
      },
      end: () => {
        core.sessions.revoke(readCookie(req.headers.cookie, SESSION_COOKIE))
        res.clearCookie(SESSION_COOKIE, { path: '/', httpOnly: true, sameSite: 'strict', secure: st.client.secure })
      },
    },
  }
}

/**
 * A method's raw input over HTTP: the query (GET, DELETE), the JSON body (which must be an
 * object when present), and the path parameters, which nothing else can override.
 */
function rawInput(entry: RouteEntry, req: Request, params: Record<string, string>, body: unknown): object {
  if (body !== undefined && (body === null || typeof body !== 'object' || Array.isArray(body)))
    throw new ApiError('bad_input', 'the body must be a JSON object')
  const query = entry.verb === 'GET' || entry.verb === 'DELETE' ? (req.query as object) : {}
  return { ...query, ...(body as object | undefined), ...params }
}

/** Contract methods over HTTP, dispatched from one precompiled route table. */
export function contractRoutes(core: Core): RequestHandler {
  const logger = core.logger.child('http')
  const routes = new RouteTable(contract as Record<string, MethodDef>)

  async function serve(entry: RouteEntry, params: Record<string, string>, req: Request, res: Response) {
    const def = entry.def
    const style = def.errorStyle ?? 'control'
    const ctx = httpContext(core, req, res)
    try {
      const body = STATE_CHANGING.has(entry.verb)
        ? await readJsonBody(req, def.bodyLimit ?? JSON_LIMIT_BYTES)
        : undefined
      const raw = rawInput(entry, req, params, body)
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

  return (req, res, next) => {
    let match
    try {
      match = routes.match(req.method, req.path)
    } catch (err) {
      return sendError(res, toPublicError(err, logger), styleFor(requestState(res).surface, req.path))
    }
    if (!match) return next()
    void serve(match.entry, match.params, req, res)
  }
}
