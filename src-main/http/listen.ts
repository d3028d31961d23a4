import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Core } from '../core/app'
import { createHttpApp, type HttpAppOptions } from './server'

export interface RunningServer {
  readonly server: http.Server
  readonly url: string
  readonly port: number
  close(): Promise<void>
}

export async function startHttpServer(
  core: Core,
  listen: { port: number; host: string },
  opts: HttpAppOptions = {},
): Promise<RunningServer> {
  const app = createHttpApp(core, opts)
  const server = http.createServer(app)
  // Long proxied generations (30 min) must not be cut by Node's default request timeout.
  server.requestTimeout = 0
  server.headersTimeout = 60_000
  server.keepAliveTimeout = 65_000
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
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
