import type { IncomingMessage } from 'node:http'
import type { TLSSocket } from 'node:tls'
import net from 'node:net'
import { addressMatcher, limitKeyOf, unmapIpv4 } from '../core/netAddress'

/** Who sent a request, as rate limits, logs and the session cookie see it. */
export interface ClientAddress {
  /** The client's address: the socket peer, or the forwarded client when the peer is a trusted proxy. */
  readonly ip: string
  /** What per-address limits count under: the IPv4 address or the IPv6 /64. */
  readonly limitKey: string
  /** The request reached the first hop over https (directly, or as a trusted proxy says). */
  readonly secure: boolean
}

function headerValues(value: string | string[] | undefined): string[] {
  if (value === undefined) return []
  return (Array.isArray(value) ? value.join(',') : value)
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '')
}

/**
 * The one function that says who a request came from. `X-Forwarded-For` and
 * `X-Forwarded-Proto` are believed only when the socket peer is in TRUSTED_PROXIES; the client
 * is then the right-most forwarded hop that is not itself a trusted proxy, since every proxy
 * appends the peer it saw and only the hops we trust can be taken at their word. A peer that is
 * not trusted is the client of every request on its connection: worked out once per socket.
 */
export function clientAddressResolver(trustedProxies: readonly string[]): (req: IncomingMessage) => ClientAddress {
  const trusted = addressMatcher(trustedProxies)
  const perSocket = new WeakMap<net.Socket, ClientAddress>()
  return (req) => {
    const known = perSocket.get(req.socket)
    if (known !== undefined) return known
    const peer = unmapIpv4(req.socket.remoteAddress ?? '')
    const direct = Boolean((req.socket as TLSSocket).encrypted)
    if (peer === '' || !trusted(peer)) {
      const client = { ip: peer || 'unknown', limitKey: limitKeyOf(peer || 'unknown'), secure: direct }
      // Before the connection is up the peer is not known yet: not cached.
      if (peer !== '') perSocket.set(req.socket, client)
      return client
    }
    let ip = peer
    const hops = headerValues(req.headers['x-forwarded-for'])
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = unmapIpv4((hops[i] as string).replace(/^\[|\](:\d+)?$/g, ''))
      if (net.isIP(hop) === 0) break // a proxy passed something that is no address: stop at the last hop we trust
      ip = hop
      if (!trusted(hop)) break
    }
    const proto = headerValues(req.headers['x-forwarded-proto'])[0]?.toLowerCase()
    return { ip, limitKey: limitKeyOf(ip), secure: proto === undefined ? direct : proto === 'https' }
  }
}
