// The gateway bench's references for "what Node itself costs": Node's HTTP server relaying POSTs to
// the upstream with nothing else (no edge, no credentials, no JSON check, no request log, no usage
// meter), through one of two clients:
// - `undici`: undici's Pool, the usual client of a proxy written for Node (the bench's "bare Node
//   proxy"; Tandem's fast path stood on it until its relays got their own client);
// - `relay`: Tandem's own relay client (gateway/relayConnections.ts), the one its relays use now
//   (the bench's "Node floor": what Tandem would cost with none of its own work).
// Chunks from one upstream read leave in one write, as Tandem's relay does.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Pool, type Dispatcher } from 'undici'
import { RelayConnections, type RelayCallHandler } from '../../../src-main/gateway/relayConnections'

export type BareClient = 'undici' | 'relay'

/** One relayed call's answer to the client, for either client. */
class BareRelay implements Dispatcher.DispatchHandler, RelayCallHandler {
  private chunks: Buffer[] = []
  private scheduled = false

  constructor(private readonly res: http.ServerResponse) {}

  onRequestStart(): void {}

  /** `headers`: undici's record, or the relay client's list (name, value, …; names lower-cased). */
  onResponseStart(
    _c: unknown,
    status: number,
    headers: Record<string, string | string[] | undefined> | readonly string[],
  ): void {
    let type: string | string[] | undefined
    if (isList(headers)) {
      for (let i = 0; i < headers.length && type === undefined; i += 2)
        if (headers[i] === 'content-type') type = headers[i + 1]
    } else type = headers['content-type']
    this.res.writeHead(status, typeof type === 'string' ? { 'content-type': type } : {})
  }

  onResponseData(_c: unknown, chunk: Buffer): void {
    this.chunks.push(chunk)
    if (this.scheduled) return
    this.scheduled = true
    process.nextTick(() => {
      this.scheduled = false
      const out = this.take()
      if (out) this.res.write(out)
    })
  }

  onResponseEnd(): void {
    this.res.end(this.take())
  }

  onResponseError(_c: unknown, err: Error): void {
    this.res.destroy(err)
  }

  private take(): Buffer | undefined {
    const c = this.chunks
    this.chunks = []
    return c.length === 0 ? undefined : c.length === 1 ? c[0] : Buffer.concat(c)
  }
}

function isList(headers: object): headers is readonly string[] {
  return Array.isArray(headers)
}

const JSON_HEADERS = ['content-type', 'application/json', 'accept', 'application/json']
const SSE_HEADERS = ['content-type', 'application/json', 'accept', 'text/event-stream']

interface Upstream {
  /** Sends one relayed POST; `relay` hears the answer. */
  send(path: string, body: Buffer, relay: BareRelay): void
  close(): void
}

function upstreamThrough(client: BareClient, upstreamPort: number): Upstream {
  if (client === 'relay') {
    const connections = new RelayConnections({ https: false, hostname: '127.0.0.1', port: upstreamPort })
    return {
      send: (path, body, relay) =>
        connections.dispatch(
          { path, headers: body.includes('"stream":true') ? SSE_HEADERS : JSON_HEADERS, body },
          relay,
        ),
      close: () => connections.destroy(),
    }
  }
  const pool = new Pool(`http://127.0.0.1:${upstreamPort}`, { connections: 128 })
  return {
    send: (path, body, relay) => {
      const accept = body.includes('"stream":true') ? 'text/event-stream' : 'application/json'
      pool.dispatch(
        {
          method: 'POST',
          path,
          headers: { 'content-type': 'application/json', accept, 'content-length': String(body.length) },
          body,
        },
        relay,
      )
    },
    close: () => void pool.close(),
  }
}

/** Listens on loopback (`port`, or a free one) in front of `upstreamPort`; resolves with its URL. */
export async function startBareProxy(
  upstreamPort: number,
  port = 0,
  client: BareClient = 'undici',
): Promise<{ url: string; close(): void }> {
  const upstream = upstreamThrough(client, upstreamPort)
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = []
    req.on('data', (c: Buffer) => parts.push(c))
    req.on('end', () =>
      upstream.send(req.url ?? '/', parts.length === 1 ? parts[0]! : Buffer.concat(parts), new BareRelay(res)),
    )
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections()
      server.close()
      upstream.close()
    },
  }
}

/**
 * The bench's child role: listens in front of BENCH_UPSTREAM_PORT through BENCH_BARE_CLIENT's
 * client (undici unless `relay`), prints `{url}`, exits when stdin closes.
 */
export async function runBareProxyRole(): Promise<void> {
  const client: BareClient = process.env.BENCH_BARE_CLIENT === 'relay' ? 'relay' : 'undici'
  const proxy = await startBareProxy(Number(process.env.BENCH_UPSTREAM_PORT), 0, client)
  process.stdout.write(JSON.stringify({ url: proxy.url }) + '\n')
  process.stdin.resume()
  process.stdin.on('end', () => process.exit(0))
}
