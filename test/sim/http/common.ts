import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import multer from 'multer'
import type { Request, Response as ExpressResponse } from 'express'

type Req = http.IncomingMessage
type Response = http.ServerResponse

/**
 * Shared machinery of the fake llm, asr and tts servers: a loopback HTTP server that records
 * every request and can be switched into a fault (spec 1, 6.2: wedge messages, hangs, slow
 * streams, resets, refused connections).
 */
export type Fault =
  | { kind: 'none' }
  /** Answer every request with HTTP 500 and a wedge message (e.g. cudaErrorUnknown). */
  | { kind: 'error500'; message?: string }
  /** Accept the request and never answer. */
  | { kind: 'hang' }
  /** Stream normally but wait `delayMs` before each chunk. */
  | { kind: 'slow'; delayMs: number }
  /** Send the headers and `afterChunks` chunks, then destroy the socket. */
  | { kind: 'reset'; afterChunks?: number }
  /** Stop listening: connections are refused until the fault is cleared. */
  | { kind: 'refused' }

export type FaultInput = Fault | Fault['kind']

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly headers: http.IncomingHttpHeaders
  /** Bytes of body received (counted while streaming; large bodies are never held). */
  bytes: number
  /** The first bytes of the body (at most 64 KiB). */
  head: Buffer
  /** True when the client went away before the response finished. */
  closedEarly: boolean
  /** True once the response finished. */
  finished: boolean
}

export interface FakeServer {
  readonly url: string
  readonly port: number
  readonly requests: RecordedRequest[]
  setFault(f: FaultInput): Promise<void>
  readonly fault: Fault
  /** Requests whose response has neither finished nor been abandoned by the client. */
  readonly openRequests: number
  close(): Promise<void>
}

export interface FakeOptions {
  /** Fixed port (the sim cluster pins ports); 0 or absent = ephemeral. */
  port?: number
  host?: string
}

export interface FakeContext {
  readonly fault: Fault
  readonly record: RecordedRequest
  /** Sleep that ends early (resolving false) when the client goes away. */
  sleep(ms: number): Promise<boolean>
}

export type FakeHandler = (req: Req, res: Response, ctx: FakeContext) => void | Promise<void>

const HEAD_BYTES = 64 * 1024

function normalise(f: FaultInput): Fault {
  if (typeof f !== 'string') return f
  switch (f) {
    case 'slow':
      return { kind: 'slow', delayMs: 200 }
    case 'reset':
      return { kind: 'reset', afterChunks: 2 }
    default:
      return { kind: f } as Fault
  }
}

/** Starts a fake on 127.0.0.1; `route` sees an express-like req/res (express itself is not needed). */
export async function startFake(name: string, route: FakeHandler, opts: FakeOptions = {}): Promise<FakeServer> {
  const host = opts.host ?? '127.0.0.1'
  const requests: RecordedRequest[] = []
  const sockets = new Set<Socket>()
  let fault: Fault = { kind: 'none' }
  let open = 0

  const server = http.createServer((req, res) => {
    const record: RecordedRequest = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: req.headers,
      bytes: 0,
      head: Buffer.alloc(0),
      closedEarly: false,
      finished: false,
    }
    requests.push(record)
    if (requests.length > 1000) requests.splice(0, requests.length - 1000)
    open++
    let settled = false
    const settle = (): void => {
      if (settled) return
      settled = true
      open--
    }
    res.on('finish', () => {
      record.finished = true
      settle()
    })
    res.on('close', () => {
      if (!record.finished) record.closedEarly = true
      settle()
    })
    req.on('data', (chunk: Buffer) => {
      record.bytes += chunk.length
      if (record.head.length < HEAD_BYTES)
        record.head = Buffer.concat([record.head, chunk.subarray(0, HEAD_BYTES - record.head.length)])
    })
    const current = fault
    const ctx: FakeContext = {
      fault: current,
      record,
      sleep: (ms) =>
        new Promise((resolve) => {
          if (res.destroyed) return resolve(false)
          const t = setTimeout(() => {
            res.off('close', onClose)
            resolve(!res.destroyed)
          }, ms)
          const onClose = (): void => {
            clearTimeout(t)
            resolve(false)
          }
          res.once('close', onClose)
        }),
    }
    if (current.kind === 'hang') {
      req.resume()
      return
    }
    if (current.kind === 'error500') {
      req.resume()
      req.on('end', () => {
        const message = current.message ?? `CUDA error: cudaErrorUnknown: an unknown internal error occurred (${name})`
        sendJson(res, 500, { error: { message, type: 'InternalServerError', code: 500 }, detail: message })
      })
      return
    }
    Promise.resolve(route(req, res, ctx)).catch((err: unknown) => {
      if (!res.headersSent)
        sendJson(res, 500, { error: { message: String(err), type: 'InternalServerError', code: 500 } })
      else res.destroy()
    })
  })
  server.keepAliveTimeout = 5000
  server.on('connection', (s) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })

  const listen = (port: number): Promise<number> =>
    new Promise((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, host, () => {
        server.off('error', reject)
        resolve((server.address() as AddressInfo).port)
      })
    })
  const stopListening = (): Promise<void> =>
    new Promise((resolve) => {
      for (const s of sockets) s.destroy()
      if (!server.listening) return resolve()
      server.close(() => resolve())
    })

  const port = await listen(opts.port ?? 0)
  let transitions: Promise<void> = Promise.resolve()
  return {
    url: `http://${host}:${port}`,
    port,
    requests,
    get fault() {
      return fault
    },
    get openRequests() {
      return open
    },
    setFault(f) {
      fault = normalise(f)
      // Listening follows the latest fault; transitions run one after another, so a quick
      // refused → none → refused never leaves the port open (or closed) against the last word.
      const converge = async (): Promise<void> => {
        if (fault.kind === 'refused') {
          if (server.listening) await stopListening()
        } else if (!server.listening) await listen(port)
      }
      transitions = transitions.then(converge, converge)
      return transitions
    },
    async close() {
      await stopListening()
    },
  }
}

export function sendJson(res: Response, status: number, body: unknown): void {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
  res.end(text)
}

/** Reads a whole (small) request body. */
export function readBody(req: Req, limit = 8 * 1024 * 1024): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let n = 0
    req.on('data', (c: Buffer) => {
      n += c.length
      if (n > limit) {
        reject(new Error('body too large'))
        req.destroy()
        return
      }
      chunks.push(c)
    })
    req.on('end', () => resolve(Buffer.concat(chunks)))
    req.on('error', reject)
  })
}

export interface UploadedAudio {
  readonly field: string
  readonly filename: string
  readonly bytes: number
  /** First bytes (for the WAV header). */
  readonly head: Buffer
  /** Per TONE_WINDOW_S of a 16-bit mono WAV: the tone's frequency (Hz), or null for quiet; empty for other files. */
  readonly tones: readonly (number | null)[]
}

/** The window the fake hears a tone in (see toneReader). */
export const TONE_WINDOW_S = 0.25

/**
 * Reads a 16-bit mono PCM WAV as it streams past: per window, its loudness and zero crossings, so
 * the fake diarizer can tell the synthetic voices (one pure tone each) apart without holding the file.
 */
function toneReader(): { write(c: Buffer): void; end(): (number | null)[] } {
  let head = Buffer.alloc(0)
  let per = 0
  let carry: Buffer | null = null
  let n = 0
  let ss = 0
  let zc = 0
  let prev = 0
  const tones: (number | null)[] = []
  const close = (): void => {
    if (n === 0) return
    const rms = Math.sqrt(ss / n)
    tones.push(rms < 200 ? null : zc / 2 / ((n / per) * TONE_WINDOW_S))
    n = ss = zc = 0
  }
  const samples = (b: Buffer): void => {
    for (let i = 0; i + 1 < b.length; i += 2) {
      const v = b.readInt16LE(i)
      ss += v * v
      if (v >= 0 !== prev >= 0) zc++
      prev = v
      if (++n >= per) close()
    }
  }
  return {
    write(c) {
      if (per < 0) return
      if (per === 0) {
        head = Buffer.concat([head, c])
        if (head.length < 44) return
        const pcm =
          head.toString('ascii', 0, 4) === 'RIFF' && head.readUInt16LE(22) === 1 && head.readUInt16LE(34) === 16
        per = pcm ? Math.round(head.readUInt32LE(24) * TONE_WINDOW_S) : -1
        if (per < 0) return
        c = head.subarray(44)
      }
      if (carry) c = Buffer.concat([carry, c])
      carry = c.length % 2 === 1 ? c.subarray(c.length - 1) : null
      samples(carry ? c.subarray(0, c.length - 1) : c)
    },
    end() {
      close()
      return tones
    },
  }
}

/** A multer storage engine that counts a file's bytes and keeps only its head: a 200 MB upload costs nothing. */
const countingStorage: multer.StorageEngine = {
  _handleFile(_req, file, cb) {
    let bytes = 0
    let head = Buffer.alloc(0)
    const tones = toneReader()
    file.stream.on('data', (c: Buffer) => {
      bytes += c.length
      tones.write(c)
      if (head.length < 64) head = Buffer.concat([head, c.subarray(0, 64 - head.length)])
    })
    file.stream.on('error', cb)
    file.stream.on('end', () =>
      cb(null, { size: bytes, buffer: head, tones: tones.end() } as Partial<Express.Multer.File>),
    )
  },
  _removeFile(_req, _file, cb) {
    cb(null)
  },
}

const upload = multer({ storage: countingStorage, limits: { fields: 50, fieldSize: 1024 * 1024, files: 4 } })

/** Parses a multipart form: text fields (repeated names become arrays) and the uploaded files' sizes. */
export function parseMultipart(
  req: Req,
  res: Response,
): Promise<{ fields: Record<string, string | string[]>; files: UploadedAudio[] }> {
  return new Promise((resolve, reject) => {
    upload.any()(req as Request, res as unknown as ExpressResponse, (err?: unknown) => {
      if (err) return reject(err instanceof Error ? err : new Error(String(err)))
      const body = ((req as Request).body ?? {}) as Record<string, string | string[]>
      const files = (((req as Request).files as Express.Multer.File[] | undefined) ?? []).map((f) => ({
        field: f.fieldname,
        filename: f.originalname,
        bytes: f.size,
        head: f.buffer,
        tones: (f as { tones?: (number | null)[] }).tones ?? [],
      }))
      resolve({ fields: body, files })
    })
  })
}

/** Duration of an uploaded audio file: from its WAV header when it has one, else as 16 kHz 16-bit mono. */
export function audioDuration(file: UploadedAudio): number {
  const h = file.head
  if (h.length >= 44 && h.toString('ascii', 0, 4) === 'RIFF' && h.toString('ascii', 8, 12) === 'WAVE') {
    const byteRate = h.readUInt32LE(28)
    if (byteRate > 0) return Math.max(0, (file.bytes - 44) / byteRate)
  }
  return file.bytes / 32000
}

/** A 16-bit mono PCM WAV of `samples` samples, header written and the samples zero (silence). */
function monoWav(samples: number, sampleRate: number): Buffer {
  const buf = Buffer.alloc(44 + samples * 2)
  buf.write('RIFF', 0, 'ascii')
  buf.writeUInt32LE(36 + samples * 2, 4)
  buf.write('WAVE', 8, 'ascii')
  buf.write('fmt ', 12, 'ascii')
  buf.writeUInt32LE(16, 16)
  buf.writeUInt16LE(1, 20) // PCM
  buf.writeUInt16LE(1, 22) // mono
  buf.writeUInt32LE(sampleRate, 24)
  buf.writeUInt32LE(sampleRate * 2, 28)
  buf.writeUInt16LE(2, 32)
  buf.writeUInt16LE(16, 34)
  buf.write('data', 36, 'ascii')
  buf.writeUInt32LE(samples * 2, 40)
  return buf
}

/** A real PCM WAV (16-bit mono) holding a quiet tone; `seconds` long. */
export function makeWav(seconds: number, sampleRate = 22050, freq = 440): Buffer {
  const samples = Math.max(1, Math.round(seconds * sampleRate))
  const buf = monoWav(samples, sampleRate)
  for (let i = 0; i < samples; i++) {
    buf.writeInt16LE(Math.round(3000 * Math.sin((2 * Math.PI * freq * i) / sampleRate)), 44 + i * 2)
  }
  return buf
}

/** One stretch of a synthetic recording: a voice (a pure tone of `hz`) or, with hz 0, quiet. */
export interface ToneTurn {
  readonly hz: number
  readonly seconds: number
}

/** A 16-bit mono WAV of tone turns (the synthetic voices the fake diarizer tells apart). */
export function toneWav(turns: readonly ToneTurn[], sampleRate = 8000): Buffer {
  const total = turns.reduce((n, t) => n + Math.round(t.seconds * sampleRate), 0)
  const buf = monoWav(total, sampleRate)
  let at = 44
  for (const t of turns) {
    const n = Math.round(t.seconds * sampleRate)
    for (let i = 0; i < n; i++, at += 2)
      buf.writeInt16LE(t.hz > 0 ? Math.round(6000 * Math.sin((2 * Math.PI * t.hz * i) / sampleRate)) : 0, at)
  }
  return buf
}

/** Writes chunks honouring the fault (slow, reset); returns false when the stream was cut or abandoned. */
export async function writeChunks(
  res: Response,
  ctx: FakeContext,
  chunks: Iterable<string | Buffer>,
  delayMs = 0,
): Promise<boolean> {
  let i = 0
  for (const chunk of chunks) {
    if (ctx.fault.kind === 'reset' && i >= (ctx.fault.afterChunks ?? 2)) {
      // Let the chunks already written reach the peer, then cut the connection without a proper end.
      await ctx.sleep(20)
      res.socket?.destroy()
      return false
    }
    const wait = ctx.fault.kind === 'slow' ? ctx.fault.delayMs : delayMs
    if (wait > 0 && !(await ctx.sleep(wait))) return false
    if (res.destroyed) return false
    if (!res.write(chunk)) await new Promise((r) => res.once('drain', r))
    i++
  }
  return true
}
