import type { IncomingMessage, ServerResponse } from 'node:http'
import type { ClientAddress } from '../clientAddress'
import type { RequestState } from '../requestState'
import { allowsAnyOrigin, surfaceOf } from '../surfaces'

/**
 * First for every request: which surface it is on, who sent it (the trusted-proxy rule),
 * baseline headers, and CORS for the surfaces LAN apps and buyers' browsers call. False when the
 * request was answered here (a CORS preflight).
 */
export function enterSurface(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  st: RequestState,
  resolveClient: (req: IncomingMessage) => ClientAddress,
): boolean {
  st.surface = surfaceOf(path)
  st.client = resolveClient(req)
  res.setHeader('X-Content-Type-Options', 'nosniff')
  res.setHeader('Referrer-Policy', 'same-origin')
  if (!allowsAnyOrigin(st.surface)) return true
  res.setHeader('Access-Control-Allow-Origin', '*')
  res.setHeader('Access-Control-Expose-Headers', 'Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset')
  if (req.method !== 'OPTIONS') return true
  res.setHeader('Access-Control-Allow-Methods', 'GET, POST, PUT, DELETE, OPTIONS')
  res.setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type')
  res.setHeader('Access-Control-Max-Age', '600')
  res.statusCode = 204
  res.end()
  return false
}
