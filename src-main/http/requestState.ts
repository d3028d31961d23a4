import type { Response } from 'express'
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

export function requestState(res: Response): RequestState {
  return res.locals as RequestState
}

/** The error shape a request gets when no contract method declares one: by surface and path. */
export function styleFor(surface: Surface | undefined, path: string): ErrorStyle {
  if (surface === 'licensing-public') return 'licensing'
  if (surface === 'consumer' && path.startsWith('/v1/')) return 'openai'
  return 'control'
}
