import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import type { Core } from '../app/compositionRoot'
import { addressMatcher, connectionKeyOf } from '../lib/netAddress'
import { armBodyDeadline } from './bodyDeadline'
import { createHttpApp, type HttpAppOptions } from './server'

export interface RunningServer {
  readonly server: http.Server
  readonly url: string
  readonly port: number
  /** Serves every request from now on with this core (an in-process restart); open connections stay. */
  replaceCore(core: Core): void
  close(): Promise<void>
}

/** What one client may hold of the server: time to send a request, and connections. */
export interface ServerLimits {
  /** Time to receive a request's headers (Node's `headersTimeout`). */
  headersTimeoutMs: number
  /** Time to receive a whole request body, except on upload routes (which have an idle timeout); 0 = none. */
  bodyTimeoutMs: number
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number
  /**
   * Open connections per client address (IPv6 too: per whole address, not per /64 as the rate limits,
   * since a LAN is one /64); the one beyond is closed at once. 0 = no limit.
   */
  connectionsPerAddress: number
  /** Peers the connection limit does not apply to (a reverse proxy carries many clients). */
  unlimitedPeer?: (address: string) => boolean
}

export const DEFAULT_SERVER_LIMITS: ServerLimits = {
  headersTimeoutMs: 60_000,
  bodyTimeoutMs: 300_000,
  keepAliveTimeoutMs: 65_000,
  connectionsPerAddress: 128,
}

export interface ServerOptions extends HttpAppOptions {
  limits?: Partial<ServerLimits>
}

export async function startHttpServer(
  core: Core,
  listen: { port: number; host: string },
  opts: ServerOptions = {},
): Promise<RunningServer> {
  const { limits: given, ...appOptions } = opts
  // Behind a reverse proxy every client arrives over the proxy's connections: the proxy is not one client.
  let trusted = addressMatcher(core.config.trustedProxies)
  const limits: ServerLimits = {
    ...DEFAULT_SERVER_LIMITS,
    unlimitedPeer: (address) => trusted(address),
    ...given,
  }
  let app = createHttpApp(core, appOptions)
  const server = http.createServer({
    headersTimeout: limits.headersTimeoutMs,
    // Node's request timeout is server-wide; bodies are bounded per request below instead.
    requestTimeout: 0,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // How often Node checks headersTimeout (its default, 30 s, would let a short limit run long).
    connectionsCheckingInterval: Math.min(30_000, Math.max(250, Math.floor(limits.headersTimeoutMs / 4))),
  })
  server.on('connection', connectionLimiter(limits))
  // One listener: an emit with several listeners copies the listener list on every request.
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    armBodyDeadline(req, res, limits.bodyTimeoutMs)
    app(req, res)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const addr = server.address() as AddressInfo
  const shownHost = listen.host === '0.0.0.0' || listen.host === '::' ? '127.0.0.1' : listen.host
  return {
    server,
    port: addr.port,
    url: `http://${shownHost}:${addr.port}`,
    replaceCore(next) {
      app = createHttpApp(next, appOptions)
      trusted = addressMatcher(next.config.trustedProxies)
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

/** Counts open connections per peer and closes, at once, one that would go over the limit. */
function connectionLimiter(limits: ServerLimits): (socket: Socket) => void {
  const open = new Map<string, number>()
  return (socket) => {
    const address = socket.remoteAddress
    if (limits.connectionsPerAddress <= 0 || address === undefined || limits.unlimitedPeer?.(address)) return
    const key = connectionKeyOf(address)
    const n = open.get(key) ?? 0
    if (n >= limits.connectionsPerAddress) {
      socket.destroy()
      return
    }
    open.set(key, n + 1)
    socket.once('close', () => {
      const left = (open.get(key) ?? 1) - 1
      if (left <= 0) open.delete(key)
      else open.set(key, left)
    })
  }
}
