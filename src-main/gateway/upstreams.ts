import http from 'node:http'
import https from 'node:https'
import { RelayConnections } from './relayConnections'
import type { ServiceDirectory, ServiceName } from '../core/serviceDirectory'

/** The services the gateway forwards to. */
export type UpstreamName = ServiceName

export interface Upstream {
  readonly name: UpstreamName
  /** Origin (and base path for embeddings/vector), without a trailing slash. */
  readonly base: string
  readonly agent: http.Agent
  /** Keep-alive connections for the relayed JSON routes (chat, completions, embeddings). */
  readonly relay: RelayConnections
  /** The parsed base, so a call builds no URL object (this is the hot path of every proxied request). */
  readonly target: {
    readonly https: boolean
    readonly hostname: string
    readonly port: number
    readonly basePath: string
  }
}

/**
 * Per upstream, one keep-alive agent (uploads, model lists, health) and the relays' own connections
 * (the relayed JSON routes, where the client's per-request cost shows; relayConnections.ts):
 * proxied requests reuse connections, so the gateway adds no TCP handshake per call. Where each
 * upstream lives comes from the service directory.
 */
export class Upstreams {
  private readonly cache = new Map<UpstreamName, Upstream>()
  private readonly agents: http.Agent[] = []
  private readonly relays: RelayConnections[] = []

  constructor(private readonly services: ServiceDirectory) {}

  /** The upstream, or null when the service is not configured (see `services.get(name).hint`). */
  get(name: UpstreamName): Upstream | null {
    const known = this.cache.get(name)
    if (known) return known
    const base = this.services.get(name).baseUrl
    if (base === null) return null
    const u = new URL(base)
    const secure = u.protocol === 'https:'
    const opts = {
      keepAlive: true,
      keepAliveMsecs: 1000,
      maxSockets: 256,
      maxFreeSockets: 64,
      scheduling: 'lifo' as const,
    }
    const agent = secure ? new https.Agent(opts) : new http.Agent(opts)
    this.agents.push(agent)
    const hostname = u.hostname.replace(/^\[|\]$/g, '')
    const port = Number(u.port || (secure ? 443 : 80))
    // The relay keeps its own deadline (the 30-minute timeout) for a long generation.
    const relay = new RelayConnections({ https: secure, hostname, port, maxConnections: opts.maxSockets })
    this.relays.push(relay)
    const up: Upstream = {
      name,
      base,
      agent,
      relay,
      target: {
        https: secure,
        hostname,
        port,
        basePath: u.pathname.replace(/\/+$/, ''),
      },
    }
    this.cache.set(name, up)
    return up
  }

  destroy(): void {
    for (const a of this.agents) a.destroy()
    this.agents.length = 0
    for (const r of this.relays) r.destroy()
    this.relays.length = 0
    this.cache.clear()
  }
}
