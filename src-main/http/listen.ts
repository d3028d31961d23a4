import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Core } from '../app/core'
import { ApiError } from '../contract/errors'
import { addressMatcher } from '../lib/netAddress'
import { armBodyDeadline } from './bodyDeadline'
import { ConnectionBudget, readFileLimit, totalConnectionsFor } from './connectionBudget'
import { adminCheck } from './middleware/credentialCheck'
import { sendError } from './respond'
import { styleFor, type AdminCheck } from './requestState'
import { createHttpApp, type HttpAppOptions } from './server'
import { surfaceOf } from './surfaces'

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
  /** Open connections per IPv6 /64 (one host may own all of it); 0 = no limit. */
  connectionsPerIpv6Prefix: number
  /**
   * Open connections in all, the operator's reserve included; undefined = sized from the process's
   * open-file limit (a quarter of it, at least 256 files, kept for everything else). 0 = no cap.
   */
  connectionsTotal?: number
  /** Of the total, connections only the operator's requests (and the open login and health routes) may use. */
  operatorReserve: number
  /** Peers the connection limit does not apply to (a reverse proxy carries many clients). */
  unlimitedPeer?: (address: string) => boolean
}

export const DEFAULT_SERVER_LIMITS: ServerLimits = {
  headersTimeoutMs: 60_000,
  bodyTimeoutMs: 300_000,
  keepAliveTimeoutMs: 65_000,
  connectionsPerAddress: 128,
  connectionsPerIpv6Prefix: 1024,
  operatorReserve: 64,
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
  let logger = core.logger.child('http')
  let isOperator = adminCheck(core.credentials, core.sessions)
  const budget = connectionBudget(limits, (m) => logger.warn(m))
  logger.info(budget.started)
  const server = http.createServer({
    headersTimeout: limits.headersTimeoutMs,
    // Node's request timeout is server-wide; bodies are bounded per request below instead.
    requestTimeout: 0,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // How often Node checks headersTimeout (its default, 30 s, would let a short limit run long).
    connectionsCheckingInterval: Math.min(30_000, Math.max(250, Math.floor(limits.headersTimeoutMs / 4))),
  })
  server.on('connection', (socket) => void budget.budget.admit(socket))
  // One listener: an emit with several listeners copies the listener list on every request.
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (budget.budget.onProbation(req.socket) && !reserveAdmits(budget.budget, isOperator, req, res)) return
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
      logger = next.logger.child('http')
      isOperator = adminCheck(next.credentials, next.sessions)
      trusted = addressMatcher(next.config.trustedProxies)
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

/** The connection budget from the limits, with the line that reports it at start. */
function connectionBudget(
  limits: ServerLimits,
  log: (message: string) => void,
): { budget: ConnectionBudget; started: string } {
  const file = readFileLimit()
  const total = limits.connectionsTotal ?? totalConnectionsFor(file)
  const caps = {
    total,
    perAddress: limits.connectionsPerAddress,
    perIpv6Prefix: limits.connectionsPerIpv6Prefix,
    operatorReserve: Math.min(limits.operatorReserve, total),
  }
  const shownFile = file === null ? 'unknown' : `${file.soft} (hard ${file.hard ?? 'unlimited'})`
  const started =
    `open-file limit ${shownFile}: at most ${total || 'unlimited'} connections, ${caps.operatorReserve} of them kept for the operator; ` +
    `${caps.perAddress || 'unlimited'} per address, ${caps.perIpv6Prefix || 'unlimited'} per IPv6 /64`
  return { budget: new ConnectionBudget(caps, log, (a) => limits.unlimitedPeer?.(a) ?? false), started }
}

/** Paths a reserve connection serves without credentials, once: signing in and health. */
const RESERVE_OPEN_PATHS = new Set(['/api/login', '/api/session', '/api/health'])

/**
 * A request on a reserve connection: the operator's keeps the connection; signing in and health
 * are answered and the connection closed after; anything else is refused with 503 and closed.
 */
function reserveAdmits(
  budget: ConnectionBudget,
  isOperator: AdminCheck,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): boolean {
  if (isOperator(req)) {
    budget.verified(req.socket)
    return true
  }
  res.setHeader('Connection', 'close')
  const path = (req.url ?? '/').split('?', 1)[0]!
  if (RESERVE_OPEN_PATHS.has(path)) return true
  req.resume()
  sendError(
    res,
    new ApiError('unavailable', 'the server is at its connection limit; the rest is kept for the operator', {
      headers: { 'Retry-After': '5' },
    }),
    styleFor(surfaceOf(path), path),
  )
  return false
}
