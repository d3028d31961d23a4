import http from 'node:http'
import https from 'node:https'
import net from 'node:net'
import type { Config } from '../config/load'

/** The services the gateway forwards to. */
export type UpstreamName = 'llm' | 'asr' | 'tts' | 'embeddings' | 'vector'

export interface Upstream {
  readonly name: UpstreamName
  /** Origin (and base path for embeddings/vector), without a trailing slash. */
  readonly base: string
  readonly agent: http.Agent
  /** The parsed base, so a call builds no URL object (this is the hot path of every proxied request). */
  readonly target: {
    readonly https: boolean
    readonly hostname: string
    readonly port: number
    readonly basePath: string
  }
}

const HOSTNAME =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/

/** A host as it may appear in a URL authority, or null when it is neither an IP address nor an RFC 1123 name. */
export function urlHost(host: string): string | null {
  if (net.isIPv4(host)) return host
  if (net.isIPv6(host)) return `[${host}]`
  return HOSTNAME.test(host) ? host : null
}

/** `http://<host>:<port>` for a configured service, or null when the host is unset or not a valid host. */
export function serviceBase(host: string | undefined | null, port: number): string | null {
  if (!host) return null
  const h = urlHost(host)
  if (h === null || !Number.isInteger(port) || port < 1 || port > 65535) return null
  return `http://${h}:${port}`
}

/** A configured base URL (EMBEDDINGS_URL, VECTOR_URL), re-validated: http(s) only, no credentials, query or fragment. */
export function configuredBase(raw: string | null): string | null {
  if (!raw) return null
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    return null
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.username || u.password || u.search || u.hash) return null
  if (urlHost(u.hostname.replace(/^\[|\]$/g, '')) === null) return null
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`
}

/**
 * One keep-alive agent per upstream: proxied requests reuse connections, so the gateway adds no
 * TCP handshake per call.
 */
export class Upstreams {
  private readonly agents = new Map<string, http.Agent>()
  private readonly targets = new Map<string, Upstream['target']>()

  constructor(private readonly config: Config) {}

  get(name: UpstreamName): Upstream | null {
    const base = this.baseOf(name)
    if (base === null) return null
    let agent = this.agents.get(base)
    if (!agent) {
      const opts = {
        keepAlive: true,
        keepAliveMsecs: 1000,
        maxSockets: 256,
        maxFreeSockets: 64,
        scheduling: 'lifo' as const,
      }
      agent = base.startsWith('https:') ? new https.Agent(opts) : new http.Agent(opts)
      this.agents.set(base, agent)
    }
    let target = this.targets.get(base)
    if (!target) {
      const u = new URL(base)
      const https = u.protocol === 'https:'
      target = {
        https,
        hostname: u.hostname.replace(/^\[|\]$/g, ''),
        port: Number(u.port || (https ? 443 : 80)),
        basePath: u.pathname.replace(/\/+$/, ''),
      }
      this.targets.set(base, target)
    }
    return { name, base, agent, target }
  }

  baseOf(name: UpstreamName): string | null {
    const c = this.config
    switch (name) {
      case 'llm':
        return serviceBase(c.nodes.node1?.host, c.llm.port)
      case 'asr':
        return serviceBase(c.asr.ssh?.host, c.asr.port)
      case 'tts':
        return serviceBase(c.tts.ssh?.host, c.tts.port)
      case 'embeddings':
        return configuredBase(c.embeddingsUrl)
      case 'vector':
        return configuredBase(c.vectorUrl)
    }
  }

  /** Why a service has no address, for the 503 that says how to fix it. */
  missingHint(name: UpstreamName): string {
    switch (name) {
      case 'llm':
        return 'llm is not configured: set NODE1_HOST and NODE1_USER (and LLM_PORT if not 8888)'
      case 'asr':
        return 'asr is not configured: set NODE2_HOST/NODE2_USER or ASR_HOST/ASR_USER'
      case 'tts':
        return 'tts is not configured: set NODE2_HOST/NODE2_USER or TTS_HOST/TTS_USER'
      case 'embeddings':
        return 'embeddings upstream is not configured: set EMBEDDINGS_URL'
      case 'vector':
        return 'vector store is not configured: set VECTOR_URL'
    }
  }

  destroy(): void {
    for (const a of this.agents.values()) a.destroy()
    this.agents.clear()
  }
}
