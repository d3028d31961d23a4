import type { IncomingMessage } from 'node:http'
import type { RequestHandler } from 'express'
import type { ClientAddress } from '../clientAddress'
import { requestState } from '../requestState'
import { allowsAnyOrigin, surfaceOf } from '../surfaces'

/**
 * First for every request: which surface it is on, who sent it (the trusted-proxy rule),
 * baseline headers, and CORS for the surfaces LAN apps and buyers' browsers call.
 */
export function surfaceAndClient(resolveClient: (req: IncomingMessage) => ClientAddress): RequestHandler {
  return (req, res, next) => {
    const st = requestState(res)
    st.surface = surfaceOf(req.path)
    st.client = resolveClient(req)
    res.setHeader('X-Content-Type-Options', 'nosniff')
    res.setHeader('Referrer-Policy', 'same-origin')
    if (allowsAnyOrigin(st.surface)) {
      res.setHeader('Access-Control-Allow-Origin', '*')
      res.setHeader(
        'Access-Control-Expose-Headers',
        'Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset',
      )
      if (req.method === 'OPTIONS') {
        res.setHeader('Access-Control-Allow-Methods', 'GET, POST, PUT, DELETE, OPTIONS')
        res.setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type')
        res.setHeader('Access-Control-Max-Age', '600')
        res.status(204).end()
        return
      }
    }
    next()
  }
}
