import type { IncomingMessage, ServerResponse } from 'node:http'
import type { ClientAddress } from '../clientAddress'
import type { RequestState } from '../requestState'
import { allowsAnyOrigin, surfaceOf } from '../surfaces'

/** Every answer's baseline headers, as a `writeHead` list. */
const BASELINE: readonly string[] = ['X-Content-Type-Options', 'nosniff', 'Referrer-Policy', 'same-origin']
/** With CORS: a browser's request (it has an Origin) on the surfaces LAN apps and buyers' browsers call. */
const BASELINE_CORS: readonly string[] = [
  ...BASELINE,
  'Access-Control-Allow-Origin',
  '*',
  'Access-Control-Expose-Headers',
  'Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset',
]
/**
 * The same surfaces' answer to a GET or HEAD without an Origin: it has no CORS headers, so a cache
 * must not hand it to a browser's request for the same URL, which has one. Other methods' answers
 * are not reused by caches.
 */
const BASELINE_VARY: readonly string[] = [...BASELINE, 'Vary', 'Origin']

/**
 * First for every request: which surface it is on, who sent it (the trusted-proxy rule),
 * baseline headers, and CORS for the surfaces LAN apps and buyers' browsers call. CORS headers go
 * only on answers to requests that carry an Origin, which every CORS request does (Fetch, 3.2):
 * the agents, IDE plugins and scripts that make most gateway calls send none, and each header
 * costs every answer Node's checks of its name and value (measured in the gateway profile's twelfth pass, in the history of docs/gateway-profile.md).
 * False when the request was answered here (a CORS preflight).
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
  const anyOrigin = allowsAnyOrigin(st.surface)
  const cors = anyOrigin && req.headers.origin !== undefined
  const cacheable = req.method === 'GET' || req.method === 'HEAD'
  const headers = cors ? BASELINE_CORS : anyOrigin && cacheable ? BASELINE_VARY : BASELINE
  for (let i = 0; i < headers.length; i += 2) res.setHeader(headers[i]!, headers[i + 1]!)
  if (!cors || req.method !== 'OPTIONS') return true
  res.setHeader('Access-Control-Allow-Methods', 'GET, POST, PUT, DELETE, OPTIONS')
  res.setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type')
  res.setHeader('Access-Control-Max-Age', '600')
  res.statusCode = 204
  res.end()
  return false
}
