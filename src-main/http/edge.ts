import type { IncomingMessage, ServerResponse } from 'node:http'
import type { RequestHandler } from 'express'
import type { Core } from '../app/core'
import type { Credentials } from '../app/credentials'
import { clientAddressResolver, type ClientAddress } from './clientAddress'
import {
  adminCheck,
  checkCredentials,
  playgroundSessionCheck,
  type ConsumerSessionCheck,
} from './middleware/credentialCheck'
import { enterSurface } from './middleware/surface'
import { sendNotFoundPage, wantsNotFoundPage } from './notFoundPage'
import { sendError } from './respond'
import { requestState, styleFor, type AdminCheck } from './requestState'

export interface EdgeDeps {
  readonly resolveClient: (req: IncomingMessage) => ClientAddress
  readonly credentials: Credentials
  readonly adminCheck: AdminCheck
  /** The session cookie on the playground's consumer upload route; null unless PLAYGROUND_SESSION_UPLOADS is on. */
  readonly consumerSession: ConsumerSessionCheck | null
}

/** The edge of a server: built once, shared by every request it admits. */
export function edgeOf(core: Core): EdgeDeps {
  return {
    resolveClient: clientAddressResolver(core.config.trustedProxies, (peer) => core.untrustedProxies.seen(peer)),
    credentials: core.credentials,
    adminCheck: adminCheck(core.credentials, core.sessions),
    consumerSession: core.config.playgroundSessionUploads ? playgroundSessionCheck(core.sessions) : null,
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
  const refused = checkCredentials(edge.credentials, edge.adminCheck, req, res, st, edge.consumerSession)
  if (refused === null) return true
  // A browser sent to an unknown address while signed out: the page, not a 401 in JSON.
  if (st.surface === 'control' && wantsNotFoundPage(req, path)) sendNotFoundPage(res)
  else sendError(res, refused, styleFor(st.surface, path))
  return false
}

/** The edge as the router's first step. */
export function edgeGate(edge: EdgeDeps): RequestHandler {
  return (req, res, next) => {
    if (admitAtEdge(edge, req, res, req.path)) next()
  }
}
