import http from 'node:http'
import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import {
  ChunkedBody,
  parseResponseHead,
  RelayConnections,
  UpstreamProtocolError,
  type RelayCall,
  type RelayCallHandler,
  type ResponseHead,
} from '../../../src-main/gateway/relayConnections'

const JSON_HEADERS = ['content-type', 'application/json']

describe('parseResponseHead', () => {
  const head = (text: string): ResponseHead => {
    const h = parseResponseHead(text)
    if (h instanceof UpstreamProtocolError) throw h
    return h
  }

  it('reads status, headers in order with lower-cased names, and the framing', () => {
    const h = head('HTTP/1.1 200 OK\r\nContent-Type:  application/json \r\nX-Trace: A b\r\nContent-Length: 12')
    expect([h.status, h.headers, h.length, h.keepAlive]).toEqual([
      200,
      ['content-type', 'application/json', 'x-trace', 'A b', 'content-length', '12'],
      12,
      true,
    ])
    expect(head('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked').framing).toBe(
      head('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked').framing,
    )
    // No length and no chunking: the body ends with the connection, which is not reused.
    const untilClose = head('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip')
    expect(untilClose.keepAlive).toBe(false)
    expect(head('HTTP/1.1 200 OK').keepAlive).toBe(false)
    for (const noBody of ['HTTP/1.1 204 No Content', 'HTTP/1.1 304 Not Modified', 'HTTP/1.1 100 Continue'])
      expect(head(`${noBody}\r\nContent-Length: 0`).length).toBe(0)
    expect(head('HTTP/1.1 200\r\nContent-Length: 0').status).toBe(200)
  })

  it('keeps a connection as HTTP/1.0 and 1.1 say, and reads the upstream’s idle timeout', () => {
    expect(head('HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 1').keepAlive).toBe(false)
    expect(head('HTTP/1.1 200 OK\r\nConnection: upgrade, close\r\nContent-Length: 1').keepAlive).toBe(false)
    expect(head('HTTP/1.0 200 OK\r\nContent-Length: 1').keepAlive).toBe(false)
    expect(head('HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1').keepAlive).toBe(true)
    expect(head('HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5, max=100\r\nContent-Length: 1').idleHintMs).toBe(5000)
    expect(head('HTTP/1.1 200 OK\r\nKeep-Alive: max=100\r\nContent-Length: 1').idleHintMs).toBeNull()
    const hint = (value: string): number | null =>
      head(`HTTP/1.1 200 OK\r\nKeep-Alive: ${value}\r\nContent-Length: 1`).idleHintMs
    expect(hint('max=100, Timeout=7')).toBe(7000)
    expect(hint('max=100,timeout = 3 ,x=1')).toBe(3000)
    expect(hint('timeouts=4, timeout=2')).toBe(2000)
    expect(hint('timeout=, timeout=x, timeout=-1, timeout=1e3, max=timeout=9')).toBeNull()
    expect(hint(',,timeout=6,')).toBe(6000)
    // Two headers: the last that gives a timeout wins.
    expect(head('HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5\r\nKeep-Alive: max=1\r\nContent-Length: 1').idleHintMs).toBe(
      5000,
    )
  })

  it('refuses a head a strict parser would refuse', () => {
    for (const text of [
      'HTTP/2 200 OK',
      'HTTP/1.1 20 OK',
      'HTTP/1.1 099 Low',
      'http/1.1 200 OK',
      'HTTP/1.1 200 OK\r\nNo colon here',
      'HTTP/1.1 200 OK\r\nBad Name: x',
      'HTTP/1.1 200 OK\r\n: no name',
      'HTTP/1.1 200 OK\r\nX-Folded: a\r\n  b',
      'HTTP/1.1 200 OK\r\nX-Control: a\u0001b',
      'HTTP/1.1 200 OK\r\nX-Bare-CR: a\rb',
      'HTTP/1.1 200 OK\r\nX-Bare-LF: a\nb',
      'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked',
      'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5',
      'HTTP/1.1 200 OK\r\nContent-Length: -1',
      'HTTP/1.1 200 OK\r\nContent-Length: 5 5',
      'HTTP/1.1 200 OK\r\nContent-Length: 1234567890123456',
    ])
      expect(parseResponseHead(text), JSON.stringify(text)).toBeInstanceOf(UpstreamProtocolError)
  })

  it('refuses a 64 KiB head of many lines with a bad byte at its end, without backtracking without end', () => {
    const lines = Array.from({ length: 2000 }, (_, i) => `X-H${i}: ${'v'.repeat(24)}`)
    expect(parseResponseHead(`HTTP/1.1 200 OK\r\n${lines.join('\r\n')}\u0000`)).toBeInstanceOf(UpstreamProtocolError)
    expect(parseResponseHead(`HTTP/1.1 200 OK\r\n${lines.join('\r\n')}`)).not.toBeInstanceOf(UpstreamProtocolError)
  })
})

describe('ChunkedBody', () => {
  const body = '5;ext=1\r\nhello\r\n1A\r\n' + 'x'.repeat(26) + '\r\n0\r\nX-Trailer: t\r\n\r\n'

  it('reads the same data however the bytes are split, and tells where the body ended', () => {
    const bytes = Buffer.from(body + 'NEXT')
    for (let cut = 0; cut <= bytes.length; cut++) {
      const decoder = new ChunkedBody()
      const data: Buffer[] = []
      const first = decoder.push(bytes.subarray(0, cut), (p) => data.push(Buffer.from(p)))
      expect(first).toBeTypeOf('number')
      const second = decoder.done ? 0 : decoder.push(bytes.subarray(cut), (p) => data.push(Buffer.from(p)))
      expect(decoder.done, `cut at ${cut}`).toBe(true)
      expect(Buffer.concat(data).toString(), `cut at ${cut}`).toBe('hello' + 'x'.repeat(26))
      // The 4 bytes after the body are not used.
      expect(bytes.length - (first as number) - (second as number), `cut at ${cut}`).toBe(4)
    }
  })

  it('refuses a malformed chunk', () => {
    for (const bad of [
      'g\r\nx\r\n0\r\n\r\n',
      '\r\n',
      '3\r\nabcd\r\n0\r\n\r\n',
      '3\nabc\r\n0\r\n\r\n',
      '1234567890123\r\n',
      'f'.repeat(5000),
      '0\r\n' + `X-T: ${'t'.repeat(100)}\r\n`.repeat(200) + '\r\n',
    ]) {
      const decoder = new ChunkedBody()
      expect(
        decoder.push(Buffer.from(bad), () => undefined),
        JSON.stringify(bad.slice(0, 30)),
      ).toBeInstanceOf(UpstreamProtocolError)
    }
  })
})

/** What one call's handler heard. */
interface Heard {
  status: number
  headers: readonly string[]
  body: Buffer
  ended: boolean
  error: Error | null
}

/** A handler recording what it hears; `settled` resolves at the end or the error. */
function recorder(hooks: { onStart?: (call: RelayCall) => void; onData?: (call: RelayCall) => void } = {}): {
  handler: RelayCallHandler
  heard: Heard
  settled: Promise<Heard>
} {
  const heard: Heard = { status: 0, headers: [], body: Buffer.alloc(0), ended: false, error: null }
  let done!: (h: Heard) => void
  const settled = new Promise<Heard>((r) => (done = r))
  return {
    heard,
    settled,
    handler: {
      onRequestStart: (call) => hooks.onStart?.(call),
      onResponseStart: (_call, status, headers) => {
        heard.status = status
        heard.headers = headers
      },
      onResponseData: (call, chunk) => {
        heard.body = Buffer.concat([heard.body, chunk])
        hooks.onData?.(call)
      },
      onResponseEnd: () => {
        heard.ended = true
        done(heard)
      },
      onResponseError: (_call, err) => {
        heard.error = err
        done(heard)
      },
    },
  }
}

/**
 * A raw upstream on loopback: every request it reads whole (head and Content-Length body) is
 * answered with the bytes `answer` gives, written in the pieces given. It counts connections.
 */
async function rawUpstream(
  answer: (request: { head: string; body: Buffer; n: number }, socket: net.Socket) => (string | Buffer)[] | 'hang',
): Promise<{
  port: number
  connections: () => number
  requests: { head: string; body: Buffer }[]
  close(): Promise<void>
}> {
  let connections = 0
  let n = 0
  const requests: { head: string; body: Buffer }[] = []
  const sockets = new Set<net.Socket>()
  const server = net.createServer((socket) => {
    connections++
    socket.setNoDelay(true)
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    let pending = Buffer.alloc(0)
    socket.on('data', async (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk])
      for (;;) {
        const end = pending.indexOf('\r\n\r\n')
        if (end === -1) return
        const head = pending.subarray(0, end).toString('latin1')
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0)
        if (pending.length < end + 4 + length) return
        const body = pending.subarray(end + 4, end + 4 + length)
        pending = pending.subarray(end + 4 + length)
        requests.push({ head, body })
        const pieces = answer({ head, body, n: n++ }, socket)
        if (pieces === 'hang') continue
        for (const piece of pieces) {
          socket.write(piece)
          await new Promise((r) => setImmediate(r))
        }
      }
    })
    socket.on('error', () => undefined)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    requests,
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise((r) => server.close(r))
    },
  }
}

const ok = (body: string, extra = ''): string =>
  `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n${extra}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`

describe('RelayConnections', () => {
  const cleanup: (() => Promise<void> | void)[] = []
  afterEach(async () => {
    for (const fn of cleanup.splice(0)) await fn()
  })

  async function setUp(
    answer: Parameters<typeof rawUpstream>[0],
    opts: Partial<ConstructorParameters<typeof RelayConnections>[0]> = {},
  ): Promise<{ up: Awaited<ReturnType<typeof rawUpstream>>; pool: RelayConnections }> {
    const up = await rawUpstream(answer)
    const pool = new RelayConnections({ https: false, hostname: '127.0.0.1', port: up.port, ...opts })
    cleanup.push(
      () => pool.destroy(),
      () => up.close(),
    )
    return { up, pool }
  }

  const send = (pool: RelayConnections, body = '{"a":1}', hooks?: Parameters<typeof recorder>[0]): Promise<Heard> => {
    const r = recorder(hooks)
    pool.dispatch({ path: '/v1/chat/completions', headers: JSON_HEADERS, body: Buffer.from(body) }, r.handler)
    return r.settled
  }

  it('sends the call with its host, headers and length, and reuses the connection for the next', async () => {
    const { up, pool } = await setUp(({ body }) => [ok(`{"echo":${body.toString()}}`)])
    const first = await send(pool, '{"n":1}')
    const second = await send(pool, '{"n":2}')
    expect([first.status, first.body.toString(), first.ended]).toEqual([200, '{"echo":{"n":1}}', true])
    expect(second.body.toString()).toBe('{"echo":{"n":2}}')
    expect(first.headers).toEqual(['content-type', 'application/json', 'content-length', '16'])
    expect(up.connections()).toBe(1)
    expect(up.requests[0]!.head).toBe(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:${up.port}\r\ncontent-type: application/json\r\ncontent-length: 7`,
    )
  })

  it('reads chunked answers split anywhere, answers after 1xx, and answers that end with the connection', async () => {
    const chunked = 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\ndata\r\n6;x=y\r\n: more\r\n0\r\n\r\n'
    const { pool } = await setUp(({ n }, socket) => {
      if (n === 0) return chunked.split('')
      if (n === 1) return ['HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n', ok('"late"')]
      // No length: the body ends when the upstream ends the connection.
      setTimeout(() => socket.end(), 50)
      return ['HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nuntil ', 'the end']
    })
    expect((await send(pool)).body.toString()).toBe('data: more')
    const afterInfo = await send(pool)
    expect([afterInfo.status, afterInfo.body.toString()]).toEqual([200, '"late"'])
    const untilClose = await send(pool)
    expect([untilClose.body.toString(), untilClose.ended]).toEqual(['until the end', true])
  })

  it('does not reuse a connection the answer closes, or one with bytes after the answer', async () => {
    const { up, pool } = await setUp(({ n }) => {
      if (n === 0) return [ok('1', 'connection: close\r\n')]
      if (n === 1) return [ok('2') + 'GARBAGE']
      return [ok('3')]
    })
    expect((await send(pool)).body.toString()).toBe('1')
    expect((await send(pool)).body.toString()).toBe('2')
    expect((await send(pool)).body.toString()).toBe('3')
    expect(up.connections()).toBe(3)
  })

  it('closes a connection idle past the upstream’s Keep-Alive timeout, less a second', async () => {
    let now = 0
    const { up, pool } = await setUp(() => [ok('x', 'keep-alive: timeout=3\r\n')], { now: () => now })
    await send(pool)
    now = 1900
    await send(pool)
    expect(up.connections()).toBe(1)
    now = 1900 + 2000
    await send(pool)
    expect(up.connections()).toBe(2)
  })

  it('fails a malformed answer with the reason, and nothing after it', async () => {
    const { pool } = await setUp(({ n }) => [
      n === 0 ? 'HTTP/1.1 200 OK\r\nBad Header\r\n\r\n' : 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n',
    ])
    const badHead = await send(pool)
    expect([badHead.error, badHead.ended, badHead.status]).toEqual([expect.any(UpstreamProtocolError), false, 0])
    const badChunk = await send(pool)
    expect(badChunk.error).toBeInstanceOf(UpstreamProtocolError)
    expect(badChunk.status).toBe(200)
  })

  it('refuses an answer head over 64 KiB', async () => {
    const { pool } = await setUp(() => [`HTTP/1.1 200 OK\r\nx-big: ${'b'.repeat(70 * 1024)}\r\n\r\n`])
    expect((await send(pool)).error?.message).toMatch(/64 KiB/)
  })

  it('fails a call whose upstream closes mid-answer, after the data that came', async () => {
    const { pool } = await setUp((_req, socket) => {
      setTimeout(() => socket.destroy(), 30)
      return ['HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial']
    })
    const heard = await send(pool)
    expect(heard.body.toString()).toBe('partial')
    expect((heard.error as NodeJS.ErrnoException | null)?.code).toBe('UPSTREAM_CLOSED')
  })

  it('aborts with the handler’s reason: before a connection, and mid-answer (the connection is closed)', async () => {
    const { up, pool } = await setUp(() => ['HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nsome'])
    const early = await send(pool, '{}', { onStart: (call) => call.abort(new Error('client gone')) })
    expect([early.error?.message, up.connections()]).toEqual(['client gone', 0])
    const mid = await send(pool, '{}', { onData: (call) => call.abort(new Error('deadline')) })
    expect([mid.error?.message, mid.body.toString()]).toEqual(['deadline', 'some'])
    await new Promise((r) => setTimeout(r, 20))
    expect(pool.connections).toBe(0)
  })

  it('stops reading while paused and goes on when resumed', async () => {
    const big = 'z'.repeat(4 * 1024 * 1024)
    const { pool } = await setUp(() => [ok(big)])
    let chunks = 0
    let paused = false
    let whilePaused = -1
    const heard = await send(pool, '{}', {
      onData: (call: RelayCall) => {
        chunks++
        if (paused) whilePaused++
        if (chunks !== 1) return
        paused = true
        whilePaused = 0
        call.pause()
        setTimeout(() => {
          paused = false
          call.resume()
        }, 100)
      },
    })
    expect(whilePaused).toBe(0)
    expect(heard.body.length).toBe(big.length)
  })

  it('gives the next call a reading connection when the last one ended paused', async () => {
    const { up, pool } = await setUp(({ body }) => [ok(body.toString())])
    const first = await send(pool, '"first"', { onData: (call) => call.pause() })
    expect(first.ended).toBe(true)
    expect((await send(pool, '"second"')).body.toString()).toBe('"second"')
    expect(up.connections()).toBe(1)
  })

  it('holds calls beyond its connections until one is free, in order', async () => {
    const { up, pool } = await setUp(({ body }) => [ok(body.toString())], { maxConnections: 1 })
    const answers = await Promise.all(['1', '2', '3'].map((n) => send(pool, n)))
    expect(answers.map((a) => a.body.toString())).toEqual(['1', '2', '3'])
    expect(up.connections()).toBe(1)
  })

  it('reports a refused connection with its code', async () => {
    const closed = await rawUpstream(() => [])
    const port = closed.port
    await closed.close()
    const pool = new RelayConnections({ https: false, hostname: '127.0.0.1', port })
    cleanup.push(() => pool.destroy())
    expect(((await send(pool)).error as NodeJS.ErrnoException | null)?.code).toBe('ECONNREFUSED')
  })

  it('sends nothing for a path or header that could split the request', async () => {
    const { up, pool } = await setUp(() => [ok('x')])
    for (const [path, headers] of [
      ['/v1/chat completions', JSON_HEADERS],
      ['/v1\r\nx: y', JSON_HEADERS],
      ['/v1/chat/completions', ['x-evil', 'a\r\nhost: other']],
      ['/v1/chat/completions', ['bad name', 'x']],
    ] as const) {
      const r = recorder()
      pool.dispatch({ path, headers, body: Buffer.from('{}') }, r.handler)
      expect((await r.settled).error).toBeInstanceOf(Error)
    }
    expect(up.requests).toHaveLength(0)
  })

  it('fails the calls in progress and any later one once destroyed', async () => {
    const { pool } = await setUp(() => 'hang')
    const pending = send(pool)
    await new Promise((r) => setTimeout(r, 20))
    pool.destroy()
    expect((await pending).error).toBeInstanceOf(Error)
    expect((await send(pool)).error?.message).toMatch(/shutting down/)
  })

  it('reads 200 generated answers as Node’s own HTTP client does', async () => {
    let seed = 0x2f6b
    const next = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
      return seed % n
    }
    const cases = Array.from({ length: 200 }, () => {
      const body = Buffer.from(Array.from({ length: next(3000) }, () => next(256)))
      const headers = Array.from(
        { length: next(6) },
        (_, i) =>
          `X-${['A', 'b', 'Long-Name'][next(3)]}-${i}:${' '.repeat(next(3))}v${next(1000)} é${' '.repeat(next(2))}`,
      )
      const status = [200, 201, 400, 404, 500, 503][next(6)]!
      let framed: Buffer
      if (next(2) === 0) framed = Buffer.concat([Buffer.from(`content-length: ${body.length}\r\n\r\n`), body])
      else {
        const parts: Buffer[] = [Buffer.from('Transfer-Encoding: chunked\r\n\r\n')]
        for (let at = 0; at < body.length;) {
          const size = Math.min(body.length - at, 1 + next(700))
          parts.push(
            Buffer.from(`${size.toString(16)}${next(4) === 0 ? ';e=1' : ''}\r\n`),
            body.subarray(at, at + size),
            Buffer.from('\r\n'),
          )
          at += size
        }
        parts.push(Buffer.from(next(3) === 0 ? '0\r\nX-Trailer: 1\r\n\r\n' : '0\r\n\r\n'))
        framed = Buffer.concat(parts)
      }
      const bytes = Buffer.concat([
        Buffer.from(`HTTP/1.1 ${status} Some Reason\r\n${headers.map((h) => `${h}\r\n`).join('')}`, 'latin1'),
        framed,
      ])
      // Split into a few writes at random places.
      const cuts = [...new Set(Array.from({ length: next(4) }, () => next(bytes.length)))].sort((a, b) => a - b)
      const pieces: Buffer[] = []
      let from = 0
      for (const cut of [...cuts, bytes.length]) {
        if (cut > from) pieces.push(bytes.subarray(from, cut))
        from = cut
      }
      return pieces
    })
    // Each case is answered twice in a row: to the relay's client, then to Node's.
    const { up, pool } = await setUp(({ n }) => cases[Math.floor(n / 2)]!)
    const viaNode = async (): Promise<{ status: number; headers: string[]; body: Buffer }> =>
      new Promise((resolve, reject) => {
        const req = http.request(
          { host: '127.0.0.1', port: up.port, method: 'POST', path: '/', headers: { 'content-length': 2 } },
          (res) => {
            const chunks: Buffer[] = []
            res.on('data', (c: Buffer) => chunks.push(c))
            res.on('end', () => {
              const headers: string[] = []
              for (let i = 0; i < res.rawHeaders.length; i += 2)
                headers.push(res.rawHeaders[i]!.toLowerCase(), res.rawHeaders[i + 1]!)
              resolve({ status: res.statusCode!, headers, body: Buffer.concat(chunks) })
            })
          },
        )
        req.on('error', reject)
        req.end('{}')
      })
    for (let i = 0; i < cases.length; i++) {
      const ours = await send(pool, '{}')
      const theirs = await viaNode()
      expect(ours.error, `case ${i}`).toBeNull()
      expect([ours.status, ours.headers, ours.body.equals(theirs.body)], `case ${i}`).toEqual([
        theirs.status,
        theirs.headers,
        true,
      ])
    }
  })
})
