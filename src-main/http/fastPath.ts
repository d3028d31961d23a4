import type { IncomingMessage, ServerResponse } from 'node:http'
import { contract } from '../contract'
import type { MethodDef } from '../contract/define'
import type { Core } from '../core/app'
import type { FastRoute } from '../core/module'
import { armBodyDeadline } from './bodyDeadline'
import { admitAtEdge, edgeOf } from './edge'
import { RouteTable } from './routeTable'
import { isOriginGuarded, surfaceOf } from './surfaces'

/** Serves a request and returns true, or returns false and leaves it to the router. */
export type FastPath = (req: IncomingMessage, res: ServerResponse) => boolean

/**
 * The hot gateway routes (chat, completions, embeddings) dispatched by one map lookup before the
 * router's middleware chain. They pass the same edge as every routed request (admitAtEdge); the
 * router's later steps do nothing for them, which is checked here when the map is built: no
 * contract method answers these paths, and their surface is not origin-guarded. The edge's
 * headers are written with the answer's, and the route bounds its own body (`bodyTimeoutMs`,
 * which the server arms for the router's requests). Null when the GATEWAY_FAST_PATH setting is
 * off (everything goes through the router, for comparison).
 */
export function createFastPath(core: Core, bodyTimeoutMs: number): FastPath | null {
  if (core.config.settings.GATEWAY_FAST_PATH.value === 'off') return null
  const contractRoutes = new RouteTable(contract as Record<string, MethodDef>)
  const routes = new Map<string, FastRoute>()
  for (const m of core.modules)
    for (const [path, handler] of m.fastRoutes ?? []) {
      if (isOriginGuarded(surfaceOf(path)) || contractRoutes.match('POST', path) !== null)
        throw new Error(`${path} cannot be served on the fast path`)
      routes.set(path, handler)
    }
  if (routes.size === 0) return null
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
