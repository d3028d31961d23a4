import net from 'node:net'
import tls from 'node:tls'

/**
 * The relays' HTTP/1.1 client: keep-alive connections to one upstream, one call at a time on each.
 * It does only what a relayed call needs (a POST with a Buffer body, an answer framed by length,
 * by chunks or by the connection's end) and checks what it reads as strictly as a server's parser
 * would: a head over 64 KiB, a malformed status or header line, a length and a transfer coding
 * together, a bad chunk, or a byte after the answer is an error, never a guess. Counted against
 * undici's pool for the same relay (docs/gateway-profile.md, tenth pass), it spends about a
 * sixth of a relayed request's instructions less: no dispatcher layers, no request object, no
 * calls into a WebAssembly parser per header.
 */

/** What a call tells its handler (the relay), in this order: start, the answer's head, its data, its end; or an error. */
export interface RelayCallHandler {
  onRequestStart(call: RelayCall): void
  /** `headers`: name, value, …, names lower-cased (parseResponseHead). */
  onResponseStart(call: RelayCall, status: number, headers: readonly string[]): void
  onResponseData(call: RelayCall, chunk: Buffer): void
  onResponseEnd(call: RelayCall): void
  /** The call failed or was aborted (with the abort's reason); nothing more follows. */
  onResponseError(call: RelayCall, err: Error): void
}

/** A call in progress, as its handler steers it. */
export interface RelayCall {
  /** Stops reading the answer (the client's socket is full). */
  pause(): void
  resume(): void
  /** Ends the call; the handler's onResponseError gets `reason`. */
  abort(reason: Error): void
}

/** One call: a POST of `body` to `path` with the header list `headers` (name, value, …). */
export interface RelayCallSpec {
  readonly path: string
  readonly headers: readonly string[]
  readonly body: Buffer
}

export interface RelayConnectionsOptions {
  readonly https: boolean
  readonly hostname: string
  readonly port: number
  /** Connections open at once; calls beyond wait their turn. */
  readonly maxConnections?: number
  /** An idle connection is closed after this long, or sooner when the upstream says so (Keep-Alive: timeout). */
  readonly idleMs?: number
  readonly connectTimeoutMs?: number
  /** The clock idle times are read from (ms). */
  readonly now?: () => number
}

const MAX_HEAD_BYTES = 64 * 1024
const MAX_CHUNK_LINE = 4096
const MAX_TRAILER_BYTES = 16 * 1024
/** undici's own default; uvicorn, which serves vLLM, closes idle connections after 5 s. */
const DEFAULT_IDLE_MS = 4000
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000
/** An upstream's keep-alive hint is cut by this much, so a connection is never reused as the upstream closes it. */
const IDLE_MARGIN_MS = 1000

const HEAD_END = Buffer.from('\r\n\r\n')
/**
 * A whole answer head, read lower-cased and checked in one pass: the status line, then
 * `name: value` lines whose names are tokens and whose values hold no control character but a tab
 * (so no CR or LF outside the line ends either). Linear: every repetition ends at a CRLF.
 */
const HEAD_SHAPE =
  // eslint-disable-next-line no-control-regex -- control characters are exactly what a head may not hold
  /^http\/1\.[01] [1-9]\d\d(?: [^\x00-\x08\x0a-\x1f\x7f]*)?(?:\r\n[!#$%&'*+\-.^_`|~0-9a-z]+:[^\x00-\x08\x0a-\x1f\x7f]*)*$/
const SAFE_PATH = /^\/[!-~]*$/
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
// eslint-disable-next-line no-control-regex -- nor a header value sent
const HEADER_VALUE = /^[^\x00-\x08\x0a-\x1f\x7f]*$/

/** An answer the relay cannot read as HTTP/1.1. */
export class UpstreamProtocolError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'UpstreamProtocolError'
  }
}

/** How an answer's body is framed (RFC 9112, 6.3). */
export const enum Framing {
  None,
  Length,
  Chunked,
  UntilClose,
}

/** An answer's head, read. */
export interface ResponseHead {
  readonly status: number
  /** Name, value, name, value …: names lower-cased, values without the white space around them, in the order sent. */
  readonly headers: readonly string[]
  readonly framing: Framing
  /** Body bytes, when framed by length. */
  readonly length: number
  /** The connection may carry another call after this answer. */
  readonly keepAlive: boolean
  /** The upstream's Keep-Alive timeout in ms, when it gave one. */
  readonly idleHintMs: number | null
}

/** Reads an answer's head (without its blank line) as latin1 text; an error says what is wrong. */
export function parseResponseHead(text: string): ResponseHead | UpstreamProtocolError {
  // Lower-casing latin1 keeps every character one character, so a place in `lower` is one in `text`.
  const lower = text.toLowerCase()
  if (!text.startsWith('HTTP/1.') || !HEAD_SHAPE.test(lower))
    return new UpstreamProtocolError(`a malformed answer head: ${JSON.stringify(text.slice(0, 120))}`)
  const status = (lower.charCodeAt(9) - 0x30) * 100 + (lower.charCodeAt(10) - 0x30) * 10 + lower.charCodeAt(11) - 0x30
  const http10 = lower.charCodeAt(7) === 0x30
  const headers: string[] = []
  let declared = -1
  let codings = ''
  let connection = ''
  let idleHintMs: number | null = null
  for (let at = lower.indexOf('\r\n'); at !== -1;) {
    const next = lower.indexOf('\r\n', at + 2)
    const end = next === -1 ? lower.length : next
    const colon = lower.indexOf(':', at + 2)
    const name = lower.slice(at + 2, colon)
    const value = withoutOws(text, colon + 1, end)
    headers.push(name, value)
    if (name === 'content-length') {
      const length = digitsValue(value)
      if (declared !== -1 || length < 0)
        return new UpstreamProtocolError(`a malformed or repeated Content-Length: ${JSON.stringify(value)}`)
      declared = length
    } else if (name === 'transfer-encoding') codings += `,${withoutOws(lower, colon + 1, end)}`
    else if (name === 'connection') connection += `,${withoutOws(lower, colon + 1, end)}`
    else if (name === 'keep-alive') idleHintMs = keepAliveTimeoutMs(withoutOws(lower, colon + 1, end)) ?? idleHintMs
    at = next
  }
  const keepAlive = http10 ? listHas(connection, 'keep-alive') : !listHas(connection, 'close')
  if (status < 200 || status === 204 || status === 304)
    return responseHead(status, headers, Framing.None, 0, keepAlive, idleHintMs)
  if (codings !== '') {
    if (declared !== -1) return new UpstreamProtocolError('both Content-Length and Transfer-Encoding')
    // Chunked must be the last coding; any other framing ends with the connection.
    return lastItem(codings) === 'chunked'
      ? responseHead(status, headers, Framing.Chunked, 0, keepAlive, idleHintMs)
      : responseHead(status, headers, Framing.UntilClose, 0, false, idleHintMs)
  }
  if (declared === -1) return responseHead(status, headers, Framing.UntilClose, 0, false, idleHintMs)
  return responseHead(status, headers, declared === 0 ? Framing.None : Framing.Length, declared, keepAlive, idleHintMs)
}

/** Every head in one shape. */
function responseHead(
  status: number,
  headers: readonly string[],
  framing: Framing,
  length: number,
  keepAlive: boolean,
  idleHintMs: number | null,
): ResponseHead {
  return { status, headers, framing, length, keepAlive, idleHintMs }
}

/** A Content-Length's value: 1 to 15 digits; -1 for anything else. */
function digitsValue(value: string): number {
  if (value.length === 0 || value.length > 15) return -1
  let n = 0
  for (let i = 0; i < value.length; i++) {
    const d = value.charCodeAt(i) - 0x30
    if (d < 0 || d > 9) return -1
    n = n * 10 + d
  }
  return n
}

/**
 * The `timeout=` of a lower-cased Keep-Alive value, in ms; null when it has none. Read in place:
 * splitting the value into items cost more than the rest of the head (docs/gateway-profile.md,
 * twelfth pass).
 */
function keepAliveTimeoutMs(value: string): number | null {
  for (let start = 0; start < value.length;) {
    const comma = value.indexOf(',', start)
    const end = comma === -1 ? value.length : comma
    const eq = value.indexOf('=', start)
    if (eq !== -1 && eq < end && withoutOws(value, start, eq) === 'timeout') {
      const n = digitsValue(withoutOws(value, eq + 1, end))
      if (n >= 0) return n * 1000
    }
    start = end + 1
  }
  return null
}

/** `line` from `start` to `end` without the spaces and tabs around it (a field value's optional white space). */
function withoutOws(line: string, start: number, end: number): string {
  let from = start
  let to = end
  while (from < to && (line.charCodeAt(from) === 0x20 || line.charCodeAt(from) === 0x09)) from++
  while (to > from && (line.charCodeAt(to - 1) === 0x20 || line.charCodeAt(to - 1) === 0x09)) to--
  return line.slice(from, to)
}

/** Whether a lower-cased comma-separated list holds `item`. */
function listHas(list: string, item: string): boolean {
  if (!list.includes(item)) return false
  for (const one of list.split(',')) if (one.trim() === item) return true
  return false
}

/** The last item of a lower-cased comma-separated list. */
function lastItem(list: string): string {
  return list.slice(list.lastIndexOf(',') + 1).trim()
}

const enum ChunkStep {
  /** The size's hex digits. */
  Size,
  /** Extensions (or white space) after the size, up to its CR. */
  SizeExtension,
  SizeLf,
  Data,
  DataCr,
  DataLf,
  Trailers,
  Done,
}

/** A hex digit's value, or -1. */
function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30
  if (c >= 0x61 && c <= 0x66) return c - 0x57
  if (c >= 0x41 && c <= 0x46) return c - 0x37
  return -1
}

/**
 * A chunked body read as it arrives, across any split of its bytes, byte by byte (an event stream
 * is a chunk per token: its sizes are read without making strings of them). `push` hands each
 * piece of data to `onData` and returns how many bytes of `buf` it used (all of them until the
 * body ends), or an error.
 */
export class ChunkedBody {
  private step = ChunkStep.Size
  private left = 0
  private digits = 0
  private extensionBytes = 0
  /** The unfinished trailer line, and the trailers' bytes so far. */
  private trailer = ''
  private trailerBytes = 0

  get done(): boolean {
    return this.step === ChunkStep.Done
  }

  push(buf: Buffer, onData: (piece: Buffer) => void): number | UpstreamProtocolError {
    const n = buf.length
    let i = 0
    while (i < n) {
      switch (this.step) {
        case ChunkStep.Size: {
          const c = buf[i]!
          const d = hexValue(c)
          if (d >= 0) {
            if (++this.digits > 12) return new UpstreamProtocolError('a chunk size of more than 12 hex digits')
            this.left = this.left * 16 + d
          } else if (this.digits === 0) return new UpstreamProtocolError('a chunk without a size')
          else if (c === 0x0d) this.step = ChunkStep.SizeLf
          else if (c === 0x3b || c === 0x20 || c === 0x09) this.step = ChunkStep.SizeExtension
          else return new UpstreamProtocolError('a malformed chunk size')
          i++
          break
        }
        case ChunkStep.SizeExtension: {
          const cr = buf.indexOf(0x0d, i)
          const end = cr === -1 ? n : cr
          const lf = buf.indexOf(0x0a, i)
          if (lf !== -1 && lf < end) return new UpstreamProtocolError('a chunk line not ended by CRLF')
          this.extensionBytes += end - i
          if (this.extensionBytes > MAX_CHUNK_LINE) return new UpstreamProtocolError('a chunk line over 4 KiB')
          i = end
          if (cr !== -1) {
            this.step = ChunkStep.SizeLf
            i++
          }
          break
        }
        case ChunkStep.SizeLf:
          if (buf[i] !== 0x0a) return new UpstreamProtocolError('a chunk line not ended by CRLF')
          i++
          this.step = this.left === 0 ? ChunkStep.Trailers : ChunkStep.Data
          this.digits = 0
          this.extensionBytes = 0
          break
        case ChunkStep.Data: {
          const take = Math.min(this.left, n - i)
          onData(buf.subarray(i, i + take))
          i += take
          this.left -= take
          if (this.left === 0) this.step = ChunkStep.DataCr
          break
        }
        case ChunkStep.DataCr:
          if (buf[i] !== 0x0d) return new UpstreamProtocolError('chunk data longer than its size')
          i++
          this.step = ChunkStep.DataLf
          break
        case ChunkStep.DataLf:
          if (buf[i] !== 0x0a) return new UpstreamProtocolError('chunk data longer than its size')
          i++
          this.step = ChunkStep.Size
          break
        case ChunkStep.Trailers: {
          // Lines up to an empty one; read as text (trailers are rare and ignored).
          const lf = buf.indexOf(0x0a, i)
          const end = lf === -1 ? n : lf + 1
          this.trailer += buf.toString('latin1', i, end)
          this.trailerBytes += end - i
          i = end
          if (this.trailerBytes > MAX_TRAILER_BYTES) return new UpstreamProtocolError('trailers over 16 KiB')
          if (lf === -1) break
          if (!this.trailer.endsWith('\r\n')) return new UpstreamProtocolError('a trailer line not ended by CRLF')
          if (this.trailer === '\r\n') this.step = ChunkStep.Done
          this.trailer = ''
          break
        }
        case ChunkStep.Done:
          return i
      }
    }
    return i
  }
}

/** Where a connection is in reading the answer to its call. */
const enum Reading {
  Head,
  Length,
  Chunked,
  UntilClose,
}

class Connection {
  readonly socket: net.Socket
  call: OneCall | null = null
  /** When it went idle, and how long it may stay so. */
  idleSince = 0
  idleLimitMs: number
  private reading = Reading.Head
  private head: Buffer | null = null
  private left = 0
  private chunked: ChunkedBody | null = null
  private keepAlive = false
  private connected = false

  constructor(
    private readonly pool: RelayConnections,
    opts: Required<Pick<RelayConnectionsOptions, 'https' | 'hostname' | 'port' | 'connectTimeoutMs' | 'idleMs'>>,
  ) {
    this.idleLimitMs = opts.idleMs
    this.socket = opts.https
      ? tls.connect({
          host: opts.hostname,
          port: opts.port,
          servername: net.isIP(opts.hostname) === 0 ? opts.hostname : undefined,
          ALPNProtocols: ['http/1.1'],
        })
      : net.connect({ host: opts.hostname, port: opts.port })
    this.socket.setNoDelay(true)
    this.socket.setTimeout(opts.connectTimeoutMs)
    this.socket.once(opts.https ? 'secureConnect' : 'connect', this.onConnect)
    this.socket.on('timeout', this.onTimeout)
    this.socket.on('data', this.onData)
    this.socket.on('end', this.onEnd)
    this.socket.on('error', this.onError)
    this.socket.on('close', this.onClose)
  }

  start(call: OneCall): void {
    this.call = call
    this.reading = Reading.Head
    this.head = null
    call.connection = this
    const { spec } = call
    const head = `POST ${spec.path} HTTP/1.1${call.headerLines}${spec.body.length}\r\n\r\n`
    const socket = this.socket
    socket.cork()
    socket.write(head, 'latin1')
    socket.write(spec.body)
    socket.uncork()
  }

  private readonly onConnect = (): void => {
    this.connected = true
    this.socket.setTimeout(0)
  }

  private readonly onTimeout = (): void => {
    if (this.connected) return
    const err = Object.assign(new Error(`connect timed out`), { code: 'ETIMEDOUT' })
    this.socket.destroy(err)
  }

  private readonly onData = (chunk: Buffer): void => {
    const call = this.call
    // Bytes nobody asked for: the connection cannot be trusted to frame the next answer.
    if (call === null) return void this.socket.destroy()
    let buf = chunk
    while (buf.length > 0 && this.call === call) {
      if (this.reading === Reading.Head) {
        const rest = this.readHead(call, buf)
        if (rest === null) return
        buf = rest
      } else if (this.reading === Reading.Length) {
        const take = Math.min(this.left, buf.length)
        this.left -= take
        call.handler.onResponseData(call, take === buf.length ? buf : buf.subarray(0, take))
        if (this.call !== call) return
        buf = buf.subarray(take)
        if (this.left === 0) return this.finish(call, buf.length)
      } else if (this.reading === Reading.Chunked) {
        const used = this.chunked!.push(buf, this.onChunkData)
        if (this.call !== call) return
        if (used instanceof UpstreamProtocolError) return this.fail(call, used)
        if (this.chunked!.done) return this.finish(call, buf.length - used)
        return
      } else {
        call.handler.onResponseData(call, buf)
        return
      }
    }
  }

  /** A piece of a chunked answer's data, for the call still reading it (an abort in a handler ends it). */
  private readonly onChunkData = (piece: Buffer): void => {
    const call = this.call
    if (call !== null) call.handler.onResponseData(call, piece)
  }

  /** Reads the head from `buf` on; returns the bytes after it, or null when it is not whole yet or the call ended. */
  private readHead(call: OneCall, buf: Buffer): Buffer | null {
    const held = this.head
    const all = held === null ? buf : Buffer.concat([held, buf])
    const end = all.indexOf(HEAD_END, held === null ? 0 : Math.max(0, held.length - 3))
    // Whole or not yet, a head longer than the limit is refused.
    if ((end === -1 ? all.length : end) > MAX_HEAD_BYTES) {
      this.fail(call, new UpstreamProtocolError('an answer head over 64 KiB'))
      return null
    }
    this.head = end === -1 ? all : null
    if (end === -1) return null
    const head = parseResponseHead(all.toString('latin1', 0, end))
    if (head instanceof UpstreamProtocolError) {
      this.fail(call, head)
      return null
    }
    const rest = all.subarray(end + 4)
    if (head.status < 200) {
      if (head.status === 101) {
        this.fail(call, new UpstreamProtocolError('the upstream switched protocols'))
        return null
      }
      return rest // an informational answer: the real one follows
    }
    this.keepAlive = head.keepAlive
    if (head.idleHintMs !== null) this.idleLimitMs = Math.min(this.idleLimitMs, head.idleHintMs - IDLE_MARGIN_MS)
    call.handler.onResponseStart(call, head.status, head.headers)
    if (this.call !== call) return null
    if (head.framing === Framing.None) {
      this.finish(call, rest.length)
      return null
    }
    if (head.framing === Framing.Length) {
      this.reading = Reading.Length
      this.left = head.length
    } else if (head.framing === Framing.Chunked) {
      this.reading = Reading.Chunked
      this.chunked = new ChunkedBody()
    } else this.reading = Reading.UntilClose
    return rest
  }

  /** The answer is whole; `extra` bytes came after it. */
  private finish(call: OneCall, extra: number): void {
    this.call = null
    this.chunked = null
    call.connection = null
    // A call may end while its handler holds the socket paused; the next call must read.
    if (this.socket.isPaused()) this.socket.resume()
    if (this.keepAlive && extra === 0 && !this.socket.destroyed) this.pool.release(this)
    else this.socket.destroy()
    call.end()
  }

  fail(call: OneCall, err: Error): void {
    this.call = null
    call.connection = null
    this.socket.destroy()
    call.error(err)
  }

  private readonly onEnd = (): void => {
    const call = this.call
    if (call !== null && this.reading === Reading.UntilClose) this.finish(call, 0)
    else this.socket.destroy()
  }

  private readonly onError = (err: Error): void => {
    const call = this.call
    if (call !== null) this.fail(call, err)
  }

  private readonly onClose = (): void => {
    const call = this.call
    if (call !== null)
      this.fail(call, Object.assign(new Error('the upstream closed the connection'), { code: 'UPSTREAM_CLOSED' }))
    this.pool.closed(this)
  }
}

/** One dispatched call: its handler's view (RelayCall) and where it runs. */
class OneCall implements RelayCall {
  connection: Connection | null = null
  /** The request head's lines after the request line (RelayConnections.headerLines). */
  headerLines = ''
  private settled = false

  constructor(
    private readonly pool: RelayConnections,
    readonly spec: RelayCallSpec,
    readonly handler: RelayCallHandler,
  ) {}

  pause(): void {
    this.connection?.socket.pause()
  }

  resume(): void {
    this.connection?.socket.resume()
  }

  abort(reason: Error): void {
    if (this.settled) return
    const connection = this.connection
    if (connection !== null) connection.fail(this, reason)
    else {
      this.pool.unqueue(this)
      this.error(reason)
    }
  }

  end(): void {
    if (this.settled) return
    this.settled = true
    this.handler.onResponseEnd(this)
  }

  error(err: Error): void {
    if (this.settled) return
    this.settled = true
    this.handler.onResponseError(this, err)
  }

  get isSettled(): boolean {
    return this.settled
  }
}

/** Keep-alive connections to one upstream for the relayed calls (see the module's comment). */
export class RelayConnections {
  /** The Host header's value. */
  readonly host: string
  private readonly all = new Set<Connection>()
  private readonly linesFor = new WeakMap<readonly string[], string>()
  private readonly idle: Connection[] = []
  private readonly waiting: OneCall[] = []
  private sweep: NodeJS.Timeout | null = null
  private destroyed = false
  private readonly opts: Required<RelayConnectionsOptions>

  constructor(opts: RelayConnectionsOptions) {
    this.opts = {
      https: opts.https,
      hostname: opts.hostname,
      port: opts.port,
      maxConnections: opts.maxConnections ?? 256,
      idleMs: opts.idleMs ?? DEFAULT_IDLE_MS,
      connectTimeoutMs: opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      now: opts.now ?? (() => performance.now()),
    }
    const name = opts.hostname.includes(':') ? `[${opts.hostname}]` : opts.hostname
    const standard = opts.port === (opts.https ? 443 : 80)
    this.host = standard ? name : `${name}:${opts.port}`
  }

  /**
   * The request head's lines after the request line, up to the length's value: the same for every
   * call with one header list (the relay's are constants), so built once per list.
   */
  private headerLines(headers: readonly string[]): string {
    let lines = this.linesFor.get(headers)
    if (lines === undefined) {
      lines = `\r\nhost: ${this.host}\r\n`
      for (let i = 0; i < headers.length; i += 2) {
        const [name, value] = [headers[i]!, headers[i + 1] ?? '']
        if (!HEADER_NAME.test(name) || !HEADER_VALUE.test(value))
          throw new Error(`not a header to send: ${JSON.stringify(name)}: ${JSON.stringify(value)}`)
        lines += `${name}: ${value}\r\n`
      }
      lines += 'content-length: '
      this.linesFor.set(headers, lines)
    }
    return lines
  }

  /** Connections open now (busy and idle). */
  get connections(): number {
    return this.all.size
  }

  /** Sends one call; the handler hears everything that follows, errors included (never a throw). */
  dispatch(spec: RelayCallSpec, handler: RelayCallHandler): void {
    const call = new OneCall(this, spec, handler)
    handler.onRequestStart(call)
    if (call.isSettled) return
    if (this.destroyed) return call.error(new Error('the gateway is shutting down'))
    if (!SAFE_PATH.test(spec.path)) return call.error(new Error(`not a path to send: ${JSON.stringify(spec.path)}`))
    try {
      call.headerLines = this.headerLines(spec.headers)
    } catch (err) {
      return call.error(err as Error)
    }
    const connection = this.takeIdle() ?? this.connect()
    if (connection === null) this.waiting.push(call)
    else connection.start(call)
  }

  /** A connection that finished its call: the next waiting call runs on it, or it waits idle. */
  release(connection: Connection): void {
    if (this.destroyed) return void connection.socket.destroy()
    const next = this.waiting.shift()
    if (next !== undefined) return connection.start(next)
    connection.idleSince = this.opts.now()
    this.idle.push(connection)
    this.armSweep()
  }

  closed(connection: Connection): void {
    this.all.delete(connection)
    const at = this.idle.indexOf(connection)
    if (at !== -1) this.idle.splice(at, 1)
    // A slot freed: a waiting call may open a connection of its own.
    const next = this.waiting.length > 0 ? this.connect() : null
    if (next !== null) next.start(this.waiting.shift()!)
  }

  unqueue(call: OneCall): void {
    const at = this.waiting.indexOf(call)
    if (at !== -1) this.waiting.splice(at, 1)
  }

  /** Closes every connection; calls in progress and waiting fail. */
  destroy(): void {
    this.destroyed = true
    if (this.sweep !== null) clearTimeout(this.sweep)
    this.sweep = null
    for (const call of this.waiting.splice(0)) call.error(new Error('the gateway is shutting down'))
    for (const connection of [...this.all]) connection.socket.destroy()
  }

  /** The most recently idle connection still inside its idle limit (the others are closed). */
  private takeIdle(): Connection | null {
    const now = this.opts.now()
    for (let c = this.idle.pop(); c !== undefined; c = this.idle.pop()) {
      if (now - c.idleSince < c.idleLimitMs && !c.socket.destroyed) return c
      c.socket.destroy()
    }
    return null
  }

  private connect(): Connection | null {
    if (this.destroyed || this.all.size >= this.opts.maxConnections) return null
    const connection = new Connection(this, this.opts)
    this.all.add(connection)
    return connection
  }

  /** Idle connections past their limit are closed by one timer for the pool, armed while any is idle. */
  private armSweep(): void {
    if (this.sweep !== null) return
    this.sweep = setTimeout(() => {
      this.sweep = null
      const now = this.opts.now()
      for (const c of [...this.idle]) if (now - c.idleSince >= c.idleLimitMs) c.socket.destroy()
      if (this.idle.length > 0) this.armSweep()
    }, this.opts.idleMs / 2)
    this.sweep.unref()
  }
}
