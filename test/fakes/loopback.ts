import http from 'node:http'
import type { AddressInfo } from 'node:net'

/** One request a fake received, as it arrived. */
export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
}

export interface FakeReply {
  status: number
  body?: unknown
  headers?: Record<string, string>
}

export type FakeHandler = (req: RecordedRequest, url: URL) => FakeReply | Promise<FakeReply>

/** A loopback HTTP server for tests: records every request and answers through `handler`. */
export class LoopbackServer {
  readonly requests: RecordedRequest[] = []
  private server: http.Server | null = null
  private baseUrl = ''

  constructor(private readonly handler: FakeHandler) {}

  get url(): string {
    return this.baseUrl
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const rec: RecordedRequest = {
          method: req.method ?? 'GET',
          path: req.url ?? '/',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        }
        this.requests.push(rec)
        Promise.resolve()
          .then(() => this.handler(rec, new URL(rec.path, this.baseUrl)))
          .then(
            (reply) => send(res, reply),
            (err: unknown) => send(res, { status: 500, body: { error: String(err) } }),
          )
      })
    })
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve))
    this.baseUrl = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
    return this
  }

  async stop(): Promise<void> {
    const s = this.server
    this.server = null
    if (!s) return
    s.closeAllConnections()
    await new Promise<void>((resolve) => s.close(() => resolve()))
  }
}

/** Base of the provider fakes: one loopback server whose requests are recorded. */
export abstract class LoopbackFake {
  private readonly server = new LoopbackServer((req, url) => this.handle(req, url))

  protected abstract handle(req: RecordedRequest, url: URL): FakeReply | Promise<FakeReply>

  get url(): string {
    return this.server.url
  }

  get requests(): readonly RecordedRequest[] {
    return this.server.requests
  }

  async start(): Promise<this> {
    await this.server.start()
    return this
  }

  stop(): Promise<void> {
    return this.server.stop()
  }
}

function send(res: http.ServerResponse, reply: FakeReply): void {
  const isText = typeof reply.body === 'string'
  const body = reply.body === undefined ? '' : isText ? (reply.body as string) : JSON.stringify(reply.body)
  res.writeHead(reply.status, {
    'content-type': isText ? 'text/html; charset=utf-8' : 'application/json',
    ...reply.headers,
  })
  res.end(body)
}

/** POSTs a raw body to `url` (a webhook delivery, as a provider would send it). */
export async function postRaw(
  url: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })
  return { status: res.status, text: await res.text() }
}
