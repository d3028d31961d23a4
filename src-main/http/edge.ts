import type { IncomingMessage, ServerResponse } from 'node:http'
import type { RequestHandler } from 'express'
import type { Core } from '../core/app'
import type { Credentials } from '../core/credentials'
import { clientAddressResolver, type ClientAddress } from './clientAddress'
import { adminCheck, checkCredentials } from './middleware/credentials'
import { enterSurface } from './middleware/surface'
import { sendError } from './respond'
import { requestState, styleFor, type AdminCheck } from './requestState'

export interface EdgeDeps {
  readonly resolveClient: (req: IncomingMessage) => ClientAddress
  readonly credentials: Credentials
  readonly adminCheck: AdminCheck
}

/** The edge of a server: built once, shared by every request it admits. */
export function edgeOf(core: Core): EdgeDeps {
  return {
    resolveClient: clientAddressResolver(core.config.trustedProxies),
    credentials: core.credentials,
    adminCheck: adminCheck(core.credentials, core.sessions),
  }
}

/**
 * The one place every request passes first: its surface and client address, baseline headers and
 * CORS, then credentials. True when the request may go on; false when it was answered here (a
 * preflight, a 401, a 429).
 */
export function admitAtEdge(edge: EdgeDeps, req: IncomingMessage, res: ServerResponse, path: string): boolean {
  const st = requestState(res)
  if (!enterSurface(req, res, path, st, edge.resolveClient)) return false
  const refused = checkCredentials(edge.credentials, edge.adminCheck, req, res, st)
  if (refused === null) return true
  sendError(res, refused, styleFor(st.surface, path))
  return false
}

/** The edge as the router's first step. */
export function edgeGate(edge: EdgeDeps): RequestHandler {
  return (req, res, next) => {
    if (admitAtEdge(edge, req, res, req.path)) next()
  }
}
