import fs from 'node:fs'
import type http from 'node:http'
import { randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import busboy, { type Busboy, type Limits } from 'busboy'
import { ApiError } from '../../contract/errors'
import { ClientGone } from '../../http/body'

/**
 * Multipart helpers that never hold an upload in memory: busboy reads incoming forms (to spool a
 * file, or to find where the file part begins in a body relayed byte for byte), and an encoder
 * builds an outgoing form around a file on disk or a small one in memory.
 */

/**
 * A busboy parser for a `multipart/form-data` request; 400 when the request is not one, or is
 * compressed (the asr reads the form as sent, and neither it nor busboy inflates a body).
 */
export function openMultipart(headers: http.IncomingHttpHeaders, limits: Limits): Busboy {
  const encoding = (headers['content-encoding'] ?? 'identity').trim().toLowerCase()
  if (encoding !== 'identity' && encoding !== '')
    throw new ApiError('bad_input', `content-encoding ${encoding} is not accepted: send the upload uncompressed`)
  if (!/^multipart\/form-data\s*(;|$)/i.test(headers['content-type'] ?? ''))
    throw new ApiError('bad_input', 'expected a multipart/form-data body')
  try {
    return busboy({ headers, limits })
  } catch (err) {
    throw new ApiError('bad_input', `unreadable multipart body: ${(err as Error).message}`)
  }
}

export interface ScanOptions {
  /** The file part to find (a part with this name and a filename). */
  readonly field?: string
  /** The file part must begin within this many bytes: text fields before it are small. */
  readonly maxScan?: number
  readonly signal?: AbortSignal
}

/**
 * Reads a multipart request until the headers of its `file` part have arrived, and returns every
 * chunk read so far (the request is left paused, so the caller can relay the body byte for byte).
 * A body without that part is refused (400) before anything goes upstream.
 */
export function scanForFilePart(req: http.IncomingMessage, opts: ScanOptions = {}): Promise<Buffer[]> {
  const field = opts.field ?? 'file'
  const maxScan = opts.maxScan ?? 1024 * 1024
  const bb = openMultipart(req.headers, { fieldSize: maxScan })
  const chunks: Buffer[] = []
  const fields: string[] = []
  let scanned = 0
  return new Promise((resolve, reject) => {
    let settled = false
    const settle = (err: Error | null): void => {
      if (settled) return
      settled = true
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('close', onClose)
      opts.signal?.removeEventListener('abort', onAbort)
      req.pause()
      if (err) reject(err)
      else resolve(chunks)
    }
    const onData = (c: Buffer): void => {
      chunks.push(c)
      scanned += c.length
      bb.write(c)
      if (!settled && scanned > maxScan)
        settle(new ApiError('bad_input', `the '${field}' part must come within the first ${maxScan} bytes of the form`))
    }
    const onEnd = (): void => void bb.end()
    const onClose = (): void => {
      if (!req.complete) settle(new ClientGone())
    }
    const onAbort = (): void => settle(opts.signal?.reason instanceof Error ? opts.signal.reason : new ClientGone())
    bb.on('field', (name: string) => fields.push(name))
    bb.on('file', (name: string, stream: Readable) => {
      stream.resume()
      if (name !== field) {
        fields.push(name)
        return
      }
      settle(null)
    })
    bb.on('error', (err: Error) => settle(new ApiError('bad_input', `unreadable multipart body: ${err.message}`)))
    bb.on('close', () =>
      settle(
        new ApiError('bad_input', `multipart field '${field}' is required (got: ${fields.join(', ') || 'no parts'})`),
      ),
    )
    if (opts.signal?.aborted) return onAbort()
    opts.signal?.addEventListener('abort', onAbort, { once: true })
    req.on('data', onData)
    req.once('end', onEnd)
    req.once('close', onClose)
  })
}

/** The 400 for a form that carries more than one file. */
export function moreThanOneFile(): ApiError {
  return new ApiError('bad_input', 'the form carries more than one file: an upload takes one file part')
}

/**
 * Parses a multipart body relayed byte for byte, as it passes, only to see its parts: `onSecondFile`
 * runs when a second file part begins (the asr would refuse it in its own words, after the whole
 * upload). Write every chunk of the body to it, then end it. Malformed bodies are the asr's to refuse.
 */
export function secondFileWatch(headers: http.IncomingHttpHeaders, onSecondFile: () => void): Busboy {
  const bb = openMultipart(headers, { files: 1 })
  bb.on('file', (_name: string, stream: Readable) => void stream.resume())
  bb.once('filesLimit', onSecondFile)
  bb.on('error', () => undefined)
  return bb
}

interface FilePart {
  readonly field: string
  readonly filename: string
  readonly contentType: string
}

/** A file part on disk (an upload being relayed), streamed from there. */
export interface SpooledFile extends FilePart {
  readonly path: string
  readonly size: number
}

/** A file part held in memory (a probe's sample). */
export interface MemoryFile extends FilePart {
  readonly bytes: Buffer
}

/** A stretch of a spooled file sent as a file of its own: `header` (e.g. a WAV header), then `length` bytes from `offset`. */
export interface SlicedFile extends FilePart {
  readonly path: string
  readonly header: Buffer
  readonly offset: number
  readonly length: number
}

export type FormFile = SpooledFile | MemoryFile | SlicedFile

/** Bytes a file part carries. */
function fileLength(file: FormFile): number {
  if ('bytes' in file) return file.bytes.length
  if ('header' in file) return file.header.length + file.length
  return file.size
}

/** A file part's bytes, read from disk in 256 KiB pieces. */
async function* fileBytes(file: FormFile): AsyncGenerator<Buffer> {
  if ('bytes' in file) return yield file.bytes
  const range = 'header' in file ? { start: file.offset, end: file.offset + file.length - 1 } : {}
  if ('header' in file) {
    yield file.header
    if (file.length === 0) return
  }
  yield* fs.createReadStream(file.path, { highWaterMark: 256 * 1024, ...range }) as AsyncIterable<Buffer>
}

/** An outgoing multipart body: fields, then at most one file streamed from disk; its length is known up front. */
export function encodeMultipart(
  fields: readonly (readonly [string, string])[],
  file?: FormFile,
): { contentType: string; length: number; body: Readable } {
  const boundary = `----tandem${randomBytes(12).toString('hex')}`
  const esc = (s: string): string => s.replace(/["\r\n\\]/g, '_')
  let pre = ''
  for (const [k, v] of fields)
    pre += `--${boundary}\r\nContent-Disposition: form-data; name="${esc(k)}"\r\n\r\n${v}\r\n`
  if (file)
    pre += `--${boundary}\r\nContent-Disposition: form-data; name="${esc(file.field)}"; filename="${esc(file.filename)}"\r\nContent-Type: ${esc(file.contentType)}\r\n\r\n`
  const head = Buffer.from(pre, 'utf8')
  const tail = Buffer.from(`${file ? '\r\n' : ''}--${boundary}--\r\n`)
  async function* parts(): AsyncGenerator<Buffer> {
    yield head
    if (file) yield* fileBytes(file)
    yield tail
  }
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    length: head.length + (file === undefined ? 0 : fileLength(file)) + tail.length,
    body: Readable.from(parts(), { objectMode: false }),
  }
}
