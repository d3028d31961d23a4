import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Core } from '../core/app'
import type { FastRoute } from '../core/module'
import { armBodyDeadline } from './bodyDeadline'
import { admitAtEdge, edgeOf } from './edge'
import { contractServer } from './middleware/contractRoutes'
import { contractRouteTable } from './routeTable'
import { isOriginGuarded, surfaceOf } from './surfaces'

/** Serves a request and returns true, or returns false and leaves it to the router. */
export type FastPath = (req: IncomingMessage, res: ServerResponse) => boolean

const NO_QUERY = Object.freeze({})

/**
 * The hot POST routes dispatched by one map lookup before the router's middleware chain: the
 * gateway's relays (chat, completions, embeddings) and every contract method on a fixed POST path
 * of a surface that is not origin-guarded (the buyer API's validate and machine calls, scrub,
 * search, login). They pass the same edge as every routed request (admitAtEdge); the router's
 * later steps do nothing for them, which is checked here when the map is built: a relay shadows no
 * contract method, and no route's surface is origin-guarded, so the router would have sent a
 * contract call straight to the same contract server. The edge's headers are written with the
 * answer's, and the request's body is bounded as the server bounds the router's (`bodyTimeoutMs`;
 * a relay bounds its own). Null when the GATEWAY_FAST_PATH setting is off (everything goes through
 * the router, for comparison).
 */
export function createFastPath(core: Core, bodyTimeoutMs: number): FastPath | null {
  if (core.config.settings.GATEWAY_FAST_PATH.value === 'off') return null
  const table = contractRouteTable()
  const routes = new Map<string, FastRoute>()
  for (const m of core.modules)
    for (const [path, handler] of m.fastRoutes ?? []) {
      if (isOriginGuarded(surfaceOf(path)) || table.match('POST', path) !== null)
        throw new Error(`${path} cannot be served on the fast path`)
      routes.set(path, handler)
    }
  const serve = contractServer(core)
  for (const [path, entry] of table.fixedRoutes('POST')) {
    if (isOriginGuarded(surfaceOf(path))) continue
    routes.set(path, (req, res, ms) => {
      armBodyDeadline(req, res, ms)
      void serve(entry, {}, NO_QUERY, req, res)
    })
  }
  const edge = edgeOf(core)
  return (req, res) => {
    if (req.method !== 'POST') return false
    // Exact paths only: a query string or anything unusual takes the router.
    const route = routes.get(req.url ?? '')
    if (route === undefined) return false
    if (admitAtEdge(edge, req, res, req.url!, true)) route(req, res, bodyTimeoutMs)
    else armBodyDeadline(req, res, bodyTimeoutMs) // refused: the unread body is still bounded
    return true
  }
}
