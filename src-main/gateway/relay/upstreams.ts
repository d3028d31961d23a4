import { Pool } from 'undici'
import type { ServiceDirectory, ServiceName } from '../../cluster/serviceDirectory'

/** The services the gateway forwards to. */
export type UpstreamName = ServiceName

export interface Upstream {
  readonly name: UpstreamName
  /** How errors name it (`llm`, `llm on node3`). */
  readonly label: string
  /** Origin (and base path for embeddings/vector), without a trailing slash. */
  readonly base: string
  /** The base URL's path without a trailing slash ('' at the root): every upstream path goes under it. */
  readonly basePath: string
  /** undici's keep-alive pool to the upstream's origin: every call to it goes through this. */
  readonly pool: Pool
}

/** How long an upstream may take at each step of a call. */
export interface UpstreamTimeouts {
  /** To open a connection. */
  readonly connectMs: number
  /** From the request sent to the answer's whole head: a non-streamed generation sends its head at its end. */
  readonly headersMs: number
  /** Between two reads of the answer's body: an engine silent this long mid-answer is wedged. */
  readonly bodyMs: number
}

export const DEFAULT_UPSTREAM_TIMEOUTS: UpstreamTimeouts = {
  connectMs: 10_000,
  headersMs: 30 * 60_000,
  bodyMs: 5 * 60_000,
}

/** Connections per upstream; calls beyond wait in the pool's queue. */
const MAX_CONNECTIONS = 256

/**
 * Per upstream, one undici pool: proxied requests reuse keep-alive connections, so the gateway adds
 * no TCP handshake per call. Where each upstream lives comes from the service directory.
 */
export class Upstreams {
  private readonly cache = new Map<UpstreamName, Upstream>()

  constructor(
    private readonly services: ServiceDirectory,
    private readonly timeouts: UpstreamTimeouts = DEFAULT_UPSTREAM_TIMEOUTS,
  ) {}

  /** The upstream, or null when the service is not configured (see `services.get(name).hint`). */
  get(name: UpstreamName): Upstream | null {
    const known = this.cache.get(name)
    if (known) return known
    const base = this.services.get(name).baseUrl
    if (base === null) return null
    const up = openUpstream(name, base, this.timeouts)
    this.cache.set(name, up)
    return up
  }

  destroy(): void {
    for (const up of this.cache.values()) up.pool.destroy().catch(() => undefined)
    this.cache.clear()
  }
}

/** An upstream at `base` (an http(s) URL): its keep-alive pool to the origin and the base path under it. */
export function openUpstream(
  name: UpstreamName,
  base: string,
  timeouts: UpstreamTimeouts,
  label: string = name,
): Upstream {
  const u = new URL(base)
  const pool = new Pool(u.origin, {
    connections: MAX_CONNECTIONS,
    connectTimeout: timeouts.connectMs,
    headersTimeout: timeouts.headersMs,
    bodyTimeout: timeouts.bodyMs,
    // uvicorn, which serves vLLM, closes idle connections after 5 s.
    keepAliveTimeout: 4000,
  })
  return { name, label, base, basePath: u.pathname.replace(/\/+$/, ''), pool }
}
