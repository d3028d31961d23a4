import fs from 'node:fs'
import http from 'node:http'
import path from 'node:path'
import type { AddressInfo } from 'node:net'
import express, { type NextFunction, type Request, type Response } from 'express'
import { contract } from '../contract'
import type { CallContext, ErrorStyle, HttpVerb, MethodDef } from '../contract/define'
import { ApiError } from '../contract/errors'
import type { Core } from '../core/app'
import { invokeMethod, openStream, toPublicError, type AnyHandler } from '../core/invoke'
import { secretEquals } from '../core/adminToken'
import { allowsAnyOrigin, isOriginGuarded, surfaceOf, type Surface } from './surfaces'
import { readCookie, SESSION_COOKIE, SessionSigner } from './session'
import { writeSse } from './sse'
import { RouteTable } from './routeTable'
import { readJsonBody } from './body'
import { sendError, sendJson } from './respond'

const JSON_LIMIT_BYTES = 1024 * 1024
const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

interface RequestState {
  surface: Surface
  isAdmin: () => boolean
}

function state(res: Response): RequestState {
  return res.locals as RequestState
}

/** The error shape a request gets when no contract method declares one: by surface and path. */
export function styleFor(surface: Surface, path: string): ErrorStyle {
  if (surface === 'licensing-public') return 'licensing'
  if (surface === 'consumer' && path.startsWith('/v1/')) return 'openai'
  return 'control'
}

function bearer(req: Request): string | undefined {
  const h = req.headers.authorization
  if (!h) return undefined
  const m = /^Bearer\s+(.+)$/i.exec(h)
  return m?.[1]?.trim()
}

/** True when a state-changing request comes from a page on another origin. */
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

export interface HttpAppOptions {
  /** Built renderer to serve at `/`; null serves no dashboard (API-only tests). */
  rendererDir?: string | null
}

export function createHttpApp(core: Core, opts: HttpAppOptions = {}): express.Express {
  const app = express()
  const logger = core.logger.child('http')
  const sessions = new SessionSigner(core.adminToken, core.clock)
  const consumerKeys = core.config.consumerApiKeys
  const handlers = core.handlers as unknown as Record<string, AnyHandler>

  app.disable('x-powered-by')
  app.set('etag', false)

  // Surface, baseline headers, CORS.
  app.use((req, res, next) => {
    const surface = surfaceOf(req.path)
    state(res).surface = surface
    res.setHeader('X-Content-Type-Options', 'nosniff')
    res.setHeader('Referrer-Policy', 'same-origin')
    if (allowsAnyOrigin(surface)) {
      res.setHeader('Access-Control-Allow-Origin', '*')
      if (req.method === 'OPTIONS') {
        res.setHeader('Access-Control-Allow-Methods', 'GET, POST, PUT, DELETE, OPTIONS')
        res.setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type')
        res.setHeader('Access-Control-Max-Age', '600')
        res.status(204).end()
        return
      }
    }
    next()
  })

  // Credentials per surface. Whether the caller is the admin is worked out only when needed.
  app.use((req, res, next) => {
    const st = state(res)
    let admin: boolean | undefined
    st.isAdmin = () => {
      if (admin === undefined) {
        const token = bearer(req)
        admin =
          sessions.verify(readCookie(req.headers.cookie, SESSION_COOKIE)) ||
          (token !== undefined && core.isAdminToken(token))
      }
      return admin
    }
    switch (st.surface) {
      case 'control':
      case 'licensing-admin':
        if (!st.isAdmin())
          return sendError(res, new ApiError('unauthorized', 'admin session or bearer token required'), 'control')
        break
      case 'consumer':
        if (consumerKeys.length > 0 && !st.isAdmin()) {
          const token = bearer(req)
          const ok = token !== undefined && consumerKeys.some((k) => secretEquals(token, k))
          if (!ok)
            return sendError(
              res,
              new ApiError('unauthorized', 'a valid consumer API key is required'),
              styleFor(st.surface, req.path),
            )
        }
        break
      default:
        break
    }
    // Same-origin guard: a page on another origin must not drive the operator's session.
    if (isOriginGuarded(st.surface) && STATE_CHANGING.has(req.method) && isCrossOrigin(req)) {
      return sendError(res, new ApiError('forbidden', 'cross-origin request refused'), 'control')
    }
    next()
  })

  // Contract routes, dispatched from one precompiled table.
  const routes = new RouteTable(contract as Record<string, MethodDef>)
  app.use((req, res, next) => {
    let match
    try {
      match = routes.match(req.method, req.path)
    } catch (err) {
      return sendError(res, toPublicError(err, logger), styleFor(state(res).surface, req.path))
    }
    if (!match) return next()
    const { entry, params } = match
    const style = entry.def.errorStyle ?? 'control'
    const bodyRead = STATE_CHANGING.has(entry.verb)
      ? readJsonBody(req, entry.def.bodyLimit ?? JSON_LIMIT_BYTES)
      : Promise.resolve(undefined)
    bodyRead.then(
      (body) => serveMethod(entry.name, entry.def, entry.verb, params, body, req, res),
      (err: unknown) => {
        const answer = entry.def.unreadableBodyAnswer
        if (answer !== undefined && err instanceof ApiError && err.status === 400) return sendJson(res, 200, answer)
        sendError(res, toPublicError(err, logger), style)
      },
    )
  })

  async function serveMethod(
    name: string,
    def: MethodDef,
    verb: HttpVerb,
    params: Record<string, string>,
    body: unknown,
    req: Request,
    res: Response,
  ): Promise<void> {
    const style = def.errorStyle ?? 'control'
    // Made only when a handler asks: most calls finish before they could be abandoned.
    let abort: AbortController | null = null
    const signal = (): AbortSignal => {
      if (!abort) {
        const controller = new AbortController()
        abort = controller
        // Only a caller that leaves before the answer is complete aborts the work.
        res.on('close', () => {
          if (!res.writableFinished) controller.abort()
        })
      }
      return abort.signal
    }
    const cookie = readCookie(req.headers.cookie, SESSION_COOKIE)
    const ctx: CallContext = {
      via: 'http',
      clientIp: req.socket.remoteAddress ?? 'unknown',
      get signal() {
        return signal()
      },
      session: {
        get authenticated() {
          return state(res).isAdmin()
        },
        begin: () => {
          const s = sessions.issue()
          res.cookie(SESSION_COOKIE, s.value, {
            httpOnly: true,
            sameSite: 'strict',
            path: '/',
            maxAge: s.maxAgeS * 1000,
            secure: req.secure,
          })
        },
        end: () => {
          sessions.revoke(cookie)
          res.clearCookie(SESSION_COOKIE, { path: '/' })
        },
      },
    }
    const fromBody = STATE_CHANGING.has(verb) && body !== undefined && body !== null ? body : {}
    if (STATE_CHANGING.has(verb) && (typeof fromBody !== 'object' || Array.isArray(fromBody))) {
      return sendError(res, new ApiError('bad_input', 'the body must be a JSON object'), style)
    }
    const raw = {
      ...(verb === 'GET' || verb === 'DELETE' ? (req.query as object) : {}),
      ...(fromBody as object),
      ...params,
    }
    if (def.stream) {
      const lastId = req.headers['last-event-id']
      if (typeof lastId === 'string' && /^\d+$/.test(lastId) && !('after' in raw)) Object.assign(raw, { after: lastId })
      try {
        const items = openStream(handlers, name, raw, ctx, logger)
        await writeSse(res, items, signal(), (err) => toPublicError(err, logger))
      } catch (err) {
        sendError(res, toPublicError(err, logger), style)
      }
      return
    }
    try {
      const out = await invokeMethod(handlers, name, raw, ctx, logger)
      sendJson(res, 200, out)
    } catch (err) {
      sendError(res, toPublicError(err, logger), style)
    }
  }

  // HTTP-only domain routes (proxies, uploads, webhooks, pages).
  for (const m of core.modules) {
    if (!m.mountRoutes) continue
    const router = express.Router()
    m.mountRoutes(router)
    app.use(router)
  }

  // The dashboard.
  const rendererDir = opts.rendererDir === undefined ? defaultRendererDir() : opts.rendererDir
  if (rendererDir && fs.existsSync(path.join(rendererDir, 'index.html'))) {
    const indexHtml = fs.readFileSync(path.join(rendererDir, 'index.html'))
    const sendIndex = (_req: Request, res: Response): void => {
      res.setHeader('Content-Security-Policy', DASHBOARD_CSP)
      res.setHeader('Cache-Control', 'no-cache')
      res.type('html').send(indexHtml)
    }
    app.get(['/', '/login', '/index.html'], sendIndex)
    const icon = path.join(rendererDir, 'favicon.svg')
    if (fs.existsSync(icon)) app.get('/favicon.svg', (_req, res) => res.type('image/svg+xml').sendFile(icon))
    app.use(
      '/assets',
      express.static(path.join(rendererDir, 'assets'), { index: false, immutable: true, maxAge: '1y' }),
    )
  }

  app.use((req, res) => {
    sendError(
      res,
      new ApiError('not_found', `no route ${req.method} ${req.path}`),
      styleFor(state(res).surface, req.path),
    )
  })

  // Body-parser and other middleware errors.
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const type = (err as { type?: string }).type
    const style = styleFor(state(res).surface ?? 'control', req.path)
    if (type === 'entity.too.large') return sendError(res, new ApiError('payload_too_large', 'body too large'), style)
    if (type === 'entity.parse.failed') return sendError(res, new ApiError('bad_input', 'malformed JSON body'), style)
    if (type === 'encoding.unsupported' || type === 'charset.unsupported')
      return sendError(res, new ApiError('bad_input', 'unsupported body encoding'), style)
    sendError(res, toPublicError(err, logger), style)
  })

  return app
}

export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "media-src 'self' blob: data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "object-src 'none'",
].join('; ')

function defaultRendererDir(): string | null {
  // Built layout: out/main/index.js beside out/renderer/.
  const candidate = path.resolve(__dirname, '../renderer')
  return fs.existsSync(candidate) ? candidate : null
}
