import type { ServerResponse } from 'node:http'
import type { ErrorStyle } from '../contract/define'
import type { ConsumerIdentity } from '../gateway/consumerKeys'
import type { UsageMeter } from '../gateway/usageMeter'
import type { ClientAddress } from './clientAddress'
import type { Surface } from './surfaces'

/** What the middlewares learn about a request, in the order they run. */
export interface RequestState {
  surface: Surface
  client: ClientAddress
  /** Whether the caller holds the admin session or token (worked out only when asked). */
  isAdmin: () => boolean
  /** On the consumer surface: the key the request came with (unset when none was needed or the admin called). */
  consumer?: ConsumerIdentity
  /** A gateway route's usage meter (set by the request log when usage accounting is on). */
  usage?: UsageMeter
}

/**
 * The request's state, kept in `res.locals`: Express's place for it on routed requests, and the
 * same field on a fast-path response that never meets Express.
 */
export function requestState(res: ServerResponse): RequestState {
  const r = res as ServerResponse & { locals?: RequestState }
  return (r.locals ??= Object.create(null) as RequestState)
}

/** The error shape a request gets when no contract method declares one: by surface and path. */
export function styleFor(surface: Surface | undefined, path: string): ErrorStyle {
  if (surface === 'licensing-public') return 'licensing'
  if (surface === 'consumer' && path.startsWith('/v1/')) return 'openai'
  return 'control'
}
