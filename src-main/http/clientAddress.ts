import type { IncomingMessage } from 'node:http'
import type { TLSSocket } from 'node:tls'
import net from 'node:net'
import { addressMatcher, forwardedAddress, isLanAddress, limitKeyOf, unmapIpv4 } from '../lib/netAddress'

/** Who sent a request, as rate limits, logs and the session cookie see it. */
export interface ClientAddress {
  /** The client's address: the socket peer, or the forwarded client when the peer is a trusted proxy. */
  readonly ip: string
  /** What per-address limits count under: the IPv4 address or the IPv6 /64. */
  readonly limitKey: string
  /** The request reached the first hop over https (directly, or as a trusted proxy says). */
  readonly secure: boolean
  /**
   * The client is on the local network (isLanAddress). A request that a peer outside
   * TRUSTED_PROXIES forwarded is not: whoever it forwarded for is unknown, maybe the internet.
   */
  readonly onLan: boolean
}

function headerValues(value: string | string[] | undefined): string[] {
  if (value === undefined) return []
  return (Array.isArray(value) ? value.join(',') : value)
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '')
}

/**
 * The client a trusted proxy forwarded for: the right-most X-Forwarded-For hop that is not itself
 * a trusted proxy, since every proxy appends the peer it saw and only the hops we trust can be
 * taken at their word. Hops that name no address (`unknown`, `_hidden`, garbage) are skipped: a
 * proxy that could not tell tells us nothing, and must not make its own address the client.
 * When every hop is trusted, the farthest one; when none is an address, the peer.
 */
function forwardedClient(
  peer: string,
  header: string | string[] | undefined,
  trusted: (ip: string) => boolean,
): string {
  let client = peer
  const hops = headerValues(header)
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = forwardedAddress(hops[i] as string)
    if (hop === null) continue
    client = hop
    if (!trusted(hop)) break
  }
  return client
}

/** A request that says it passed a proxy: what the operator must see when that proxy is not trusted. */
function isForwarded(req: IncomingMessage): boolean {
  return req.headers['x-forwarded-for'] !== undefined || req.headers.forwarded !== undefined
}

/**
 * The one function that says who a request came from. `X-Forwarded-For` and
 * `X-Forwarded-Proto` are believed only when the socket peer is in TRUSTED_PROXIES; the scheme is
 * the last `X-Forwarded-Proto` value, the one the trusted hop wrote. A peer that is not trusted is
 * the client of every request on its connection: worked out once per socket, and reported to
 * `onUntrustedForwarder` when it forwards for others (every client behind it then looks like it).
 */
export function clientAddressResolver(
  trustedProxies: readonly string[],
  onUntrustedForwarder: (peer: string) => void = () => undefined,
): (req: IncomingMessage) => ClientAddress {
  const trusted = addressMatcher(trustedProxies)
  const perSocket = new WeakMap<net.Socket, ClientAddress>()
  return (req) => {
    const known = perSocket.get(req.socket)
    if (known !== undefined) return known
    const peer = unmapIpv4(req.socket.remoteAddress ?? '')
    const direct = Boolean((req.socket as TLSSocket).encrypted)
    if (peer === '' || !trusted(peer)) {
      const forwarded = isForwarded(req)
      const ip = peer || 'unknown'
      const client = { ip, limitKey: limitKeyOf(ip), secure: direct, onLan: !forwarded && isLanAddress(ip) }
      // Before the connection is up the peer is not known yet: not cached.
      if (peer === '') return client
      perSocket.set(req.socket, client)
      if (forwarded) onUntrustedForwarder(peer)
      return client
    }
    const ip = forwardedClient(peer, req.headers['x-forwarded-for'], trusted)
    const proto = headerValues(req.headers['x-forwarded-proto']).at(-1)?.toLowerCase()
    const secure = proto === undefined ? direct : proto === 'https'
    // Only X-Forwarded-For is read: a trusted proxy that names its client in `Forwarded` alone leaves it unknown.
    const unread = req.headers['x-forwarded-for'] === undefined && req.headers.forwarded !== undefined
    return { ip, limitKey: limitKeyOf(ip), secure, onLan: !unread && isLanAddress(ip) }
  }
}
