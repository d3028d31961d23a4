// The gateway bench's Node floor: Node's HTTP server relaying POSTs through undici's Pool with
// nothing else (no edge, no credentials, no JSON check, no request log, no usage meter): what
// Tandem would cost if it did nothing but relay. Chunks from one upstream read leave in one write,
// as Tandem's relay does.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Pool, type Dispatcher } from 'undici'

/** One relayed call's answer to the client. */
class BareRelay implements Dispatcher.DispatchHandler {
  private chunks: Buffer[] = []
  private scheduled = false

  constructor(private readonly res: http.ServerResponse) {}

  onRequestStart(): void {}

  onResponseStart(_c: unknown, status: number, headers: Record<string, string | string[] | undefined>): void {
    const type = headers['content-type']
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

/** Listens on loopback (`port`, or a free one) in front of `upstreamPort`; resolves with its URL. */
export async function startBareProxy(upstreamPort: number, port = 0): Promise<{ url: string; close(): void }> {
  const pool = new Pool(`http://127.0.0.1:${upstreamPort}`, { connections: 256 })
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = []
    req.on('data', (c: Buffer) => parts.push(c))
    req.on('end', () => {
      const body = parts.length === 1 ? parts[0]! : Buffer.concat(parts)
      const accept = body.includes('"stream":true') ? 'text/event-stream' : 'application/json'
      pool.dispatch(
        {
          method: 'POST',
          path: req.url ?? '/',
          headers: { 'content-type': 'application/json', accept, 'content-length': String(body.length) },
          body,
        },
        new BareRelay(res),
      )
    })
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections()
      server.close()
      pool.close().catch(() => undefined)
    },
  }
}

/** The bench's child role: listens in front of BENCH_UPSTREAM_PORT, prints `{url}`, exits when stdin closes. */
export async function runBareProxyRole(): Promise<void> {
  const proxy = await startBareProxy(Number(process.env.BENCH_UPSTREAM_PORT), 0)
  process.stdout.write(JSON.stringify({ url: proxy.url }) + '\n')
  process.stdin.resume()
  process.stdin.on('end', () => process.exit(0))
}
