import express, { type ErrorRequestHandler, type RequestHandler } from 'express'
import { ApiError } from '../contract/errors'
import type { Core } from '../app/core'
import { toPublicError } from '../app/invoke'
import type { Logger } from '../lib/logger'
import { edgeGate, edgeOf } from './edge'
import { contractRoutes } from './middleware/contractRoutes'
import { defaultRendererDir, mountDashboard } from './middleware/dashboard'
import { originGuard } from './middleware/originGuard'
import { sendNotFoundPage, wantsNotFoundPage } from './notFoundPage'
import { sendError } from './respond'
import { requestState, styleFor } from './requestState'

export interface HttpAppOptions {
  /** Built renderer to serve at `/`; null serves no dashboard (API-only tests). */
  rendererDir?: string | null
}

/**
 * HTTP-only domain routes (proxies, uploads, webhooks, pages), mounted behind the same gates. Each
 * runs as a call of its client, like a contract method, so a buyer action taken through a page is
 * audited with the caller's address and user agent.
 */
function domainRoutes(core: Core): RequestHandler {
  const router = express.Router()
  router.use((req, res, next) =>
    core.callers.runUntilClosed(
      { via: 'http', clientIp: requestState(res).client.ip, userAgent: req.headers['user-agent'] },
      res,
      next,
    ),
  )
  for (const m of core.modules) m.mountRoutes?.(router)
  return router
}

/**
 * Runs steps in order as one Express layer. Express matches every layer against the path, which
 * costs more per request than the steps themselves on the hot API paths.
 */
function inOrder(...steps: RequestHandler[]): RequestHandler {
  return (req, res, done) => {
    let i = 0
    const next = (err?: unknown): void => {
      const step = steps[i++]
      if (err !== undefined || !step) return done(err)
      void step(req, res, next)
    }
    next()
  }
}

function notFound(): RequestHandler {
  return (req, res) =>
    wantsNotFoundPage(req, req.path)
      ? sendNotFoundPage(res)
      : sendError(
          res,
          new ApiError('not_found', `no route ${req.method} ${req.path}`),
          styleFor(requestState(res).surface, req.path),
        )
}

/** Errors from Express itself and from middleware that passed one on. */
function lastResort(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    const style = styleFor(requestState(res).surface, req.path)
    const type = (err as { type?: string }).type
    if (type === 'entity.too.large') return sendError(res, new ApiError('payload_too_large', 'body too large'), style)
    if (type === 'entity.parse.failed') return sendError(res, new ApiError('bad_input', 'malformed JSON body'), style)
    // The router's own refusal of a path parameter it cannot decode.
    if (err instanceof URIError)
      return sendError(res, new ApiError('not_found', 'no such path: not valid percent-encoding'), style)
    sendError(res, toPublicError(err, logger), style)
  }
}

/**
 * The HTTP face of Tandem and its one dispatcher, as the named steps every request passes in order:
 * the edge (its surface and client address, credentials), the same-origin guard, contract routes
 * (each method's own rate limit is spent in the shared pipeline), the domains' own routes, the
 * dashboard, and 404.
 */
export function createHttpApp(core: Core, opts: HttpAppOptions = {}): express.Express {
  const app = express()
  app.disable('x-powered-by')
  app.set('etag', false)
  app.use(inOrder(edgeGate(edgeOf(core)), originGuard(), contractRoutes(core)))
  app.use(domainRoutes(core))
  mountDashboard(app, opts.rendererDir === undefined ? defaultRendererDir() : opts.rendererDir)
  app.use(notFound())
  app.use(lastResort(core.logger.child('http')))
  return app
}
