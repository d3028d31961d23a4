import type { IncomingMessage, ServerResponse } from 'node:http'
import express, { type Router } from 'express'
import { contract } from '../../contract'
import { splitRoute, type CallContext, type HttpVerb, type MethodDef } from '../../contract/define'
import { ApiError } from '../../contract/errors'
import type { Core } from '../../app/core'
import { invokeMethod, openStream, toPublicError } from '../../app/invoke'
import { readJsonBody } from '../body'
import { sendError, sendJson } from '../respond'
import { isAdmin, requestState } from '../requestState'
import { clearSessionCookie, readCookie, SESSION_COOKIE, setSessionCookie } from '../session'
import { writeSse } from '../sse'
import { STATE_CHANGING } from './originGuard'

const JSON_LIMIT_BYTES = 1024 * 1024

/** One contract method on one of its routes. */
export interface RouteEntry {
  readonly name: string
  readonly def: MethodDef
  readonly verb: HttpVerb
}

/** The call context of one HTTP request: who, the abort signal (made on demand), the session cookie. */
function httpContext(core: Core, req: IncomingMessage, res: ServerResponse): CallContext {
  const st = requestState(res)
  let abort: AbortController | null = null
  return {
    via: 'http',
    clientIp: st.client.ip,
    limitKey: st.client.limitKey,
    consumerKeyId: st.consumer?.kind === 'key' ? st.consumer.id : undefined,
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
        setSessionCookie(res, s.value, s.maxAgeS, core.clock.now(), st.client.secure)
      },
      end: () => {
        core.sessions.revoke(readCookie(req.headers.cookie, SESSION_COOKIE))
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

/** Answers one contract call over HTTP, on Node's own request and response. */
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

/**
 * Contract methods over HTTP on Express's router, one route per method path and alias. The routes
 * sit in one sub-router per path prefix (`/v1/admin`, `/api/models`, …), so a request walks the
 * few routes under its own prefix rather than all of them (a relayed `/v1` call passed every
 * contract route before it; docs/gateway-profile.md). In each, fixed paths come before
 * parameterised ones, so a fixed path is never taken for a parameter.
 */
export function contractRoutes(core: Core): Router {
  const serve = contractServer(core)
  const groups = new Map<string, { path: string; entry: RouteEntry }[]>()
  for (const [name, def] of Object.entries(contract as Record<string, MethodDef>))
    for (const route of [def.http, ...(def.aliases ?? [])]) {
      const { verb, path } = splitRoute(route)
      const prefix = prefixOf(path)
      const group = groups.get(prefix) ?? []
      group.push({ path: prefix === '/' ? path : path.slice(prefix.length), entry: { name, def, verb } })
      groups.set(prefix, group)
    }
  const router = express.Router()
  for (const [prefix, routes] of groups) {
    const sub = express.Router({ mergeParams: true })
    const fixedFirst = [...routes.filter((r) => !r.path.includes(':')), ...routes.filter((r) => r.path.includes(':'))]
    for (const { path, entry } of fixedFirst) {
      const verb = entry.verb.toLowerCase() as Lowercase<HttpVerb>
      sub[verb](path, (req, res, next) => {
        serve(entry, req.params as Record<string, string>, req.query, req, res).catch(next)
      })
    }
    router.use(prefix, sub)
  }
  return router
}

/** A route's first two segments, or its first when it has two: never its last, which holds its own name. */
function prefixOf(path: string): string {
  const segments = path.split('/').filter((s) => s !== '')
  return `/${segments.slice(0, Math.min(2, segments.length - 1)).join('/')}`
}
