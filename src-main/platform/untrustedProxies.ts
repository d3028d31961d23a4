import type { Logger } from '../lib/logger'

/** Enough to name the proxy (or two) an operator forgot, without growing with what clients send. */
const KEPT = 4

/**
 * Peers that send X-Forwarded-For or Forwarded without being in TRUSTED_PROXIES. Behind such a
 * reverse proxy every client looks like the proxy: they share its rate limits and its credential
 * lockout, and https is not seen. The log says so once per peer, and the Settings page shows it
 * among the configuration warnings. A LAN client can send the header too, so the words say what
 * was seen and what to do if the peer is a proxy, not that it is one.
 */
export class UntrustedProxies {
  private readonly peers = new Set<string>()

  constructor(private readonly logger: Logger) {}

  seen(peer: string): void {
    if (this.peers.has(peer) || this.peers.size >= KEPT) return
    this.peers.add(peer)
    this.logger.warn('forwarded request from a peer not in TRUSTED_PROXIES', { peer })
  }

  /** The configuration warning, or null when no such peer was seen. */
  warning(): string | null {
    if (this.peers.size === 0) return null
    const list = [...this.peers].join(', ')
    return (
      `Requests from ${list} carry X-Forwarded-For or Forwarded headers, but TRUSTED_PROXIES does not list ` +
      `${this.peers.size === 1 ? 'it' : 'them'}. If that is your reverse proxy, every client behind it looks like ` +
      `the proxy: they share one rate limit and one lockout, and https is not recognised. Set TRUSTED_PROXIES to ` +
      `the proxy's address (Settings, Security; docs/deploy.md).`
    )
  }
}
