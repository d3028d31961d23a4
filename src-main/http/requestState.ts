import type { IncomingMessage, ServerResponse } from 'node:http'
import type { ErrorStyle } from '../contract/define'
import type { ConsumerIdentity } from '../platform/callerIdentity'
import type { ClientAddress } from './clientAddress'
import type { Surface } from './surfaces'

/** Whether a request carries the admin session or token: one function per server, shared by every request. */
export type AdminCheck = (req: IncomingMessage) => boolean

/**
 * What the middlewares learn about a request, in the order they run. It holds values and shared
 * functions only, never a function made for this request: V8 may allocate these objects straight
 * in the old generation (allocation-site pretenuring, once long-lived streams made the site look
 * long-lived), and a per-request closure there over `req` kept every request's objects alive
 * through the young-generation collections that should have freed them (docs/gateway-profile.md).
 */
export interface RequestState {
  surface: Surface
  client: ClientAddress
  /** The edge's admin check; unset before the edge, when nobody is the admin. */
  adminCheck: AdminCheck | undefined
  /** Its answer once asked (isAdmin): worked out only when a route needs it. */
  admin: boolean | undefined
  /** On the consumer surface: the key the request came with (unset when none was needed or the admin called). */
  consumer?: ConsumerIdentity
}

const NO_CLIENT: ClientAddress = { ip: 'unknown', limitKey: 'unknown', secure: false, onLan: false }

/**
 * The request's state, kept in `res.locals` (Express's place for it). It starts with every field,
 * on the most guarded surface until the edge says otherwise, so it keeps one shape.
 */
export function requestState(res: ServerResponse): RequestState {
  const r = res as ServerResponse & { locals?: RequestState }
  return (r.locals ??= {
    surface: 'control',
    client: NO_CLIENT,
    adminCheck: undefined,
    admin: undefined,
    consumer: undefined,
  })
}

/** Whether the caller holds the admin session or token, worked out on first asking. */
export function isAdmin(req: IncomingMessage, res: ServerResponse): boolean {
  const st = requestState(res)
  if (st.admin !== undefined) return st.admin
  if (st.adminCheck === undefined) return false
  st.admin = st.adminCheck(req)
  return st.admin
}

/** The error shape a request gets when no contract method declares one: by surface and path. */
export function styleFor(surface: Surface | undefined, path: string): ErrorStyle {
  if (surface === 'licensing-public') return 'licensing'
  if (surface === 'consumer' && path.startsWith('/v1/')) return 'openai'
  return 'control'
}
