import fs from 'node:fs'
import { randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { ApiError } from '../contract/errors'

/**
 * Multipart helpers that never hold an upload in memory: a scanner that finds where the file
 * part begins in a relayed body (so a missing `file` is refused before anything goes upstream),
 * and an encoder that builds an outgoing form around a file on disk.
 */

/** The boundary of a `multipart/form-data` content type; 400 when the request is not one. */
export function multipartBoundary(contentType: string | undefined): string {
  const ct = contentType ?? ''
  if (!/^multipart\/form-data\s*(;|$)/i.test(ct)) throw new ApiError('bad_input', 'expected a multipart/form-data body')
  const m = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(ct)
  const b = m?.[1] ?? m?.[2]
  if (!b) throw new ApiError('bad_input', 'multipart/form-data body without a boundary')
  return b
}

export type ScanResult = 'need-more' | 'found' | 'overflow'

/**
 * Watches the start of a multipart body until the part named `field` (with a filename) appears.
 * Text fields before it are small, so at most `maxScan` bytes are ever held.
 */
export class FilePartScanner {
  private buf: Buffer = Buffer.alloc(0)
  private readonly delimiter: Buffer
  private searchFrom = 0
  readonly fields: string[] = []

  constructor(
    boundary: string,
    private readonly field = 'file',
    private readonly maxScan = 1024 * 1024,
  ) {
    this.delimiter = Buffer.from(`--${boundary}`)
  }

  push(chunk: Buffer): ScanResult {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk])
    for (;;) {
      const at = this.buf.indexOf(this.delimiter, this.searchFrom)
      if (at === -1) break
      const headStart = at + this.delimiter.length
      const headEnd = this.buf.indexOf('\r\n\r\n', headStart)
      if (headEnd === -1) break
      const head = this.buf.toString('latin1', headStart, headEnd)
      const name = /;\s*name="([^"]*)"/i.exec(head)?.[1]
      if (name !== undefined) {
        this.fields.push(name)
        if (name === this.field && /;\s*filename\*?=/i.test(head)) return 'found'
      }
      this.searchFrom = headEnd + 4
    }
    return this.buf.length > this.maxScan ? 'overflow' : 'need-more'
  }
}

export interface FormFile {
  readonly field: string
  readonly filename: string
  readonly contentType: string
  readonly path: string
  readonly size: number
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
    if (file) yield* fs.createReadStream(file.path, { highWaterMark: 256 * 1024 }) as AsyncIterable<Buffer>
    yield tail
  }
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    length: head.length + (file?.size ?? 0) + tail.length,
    body: Readable.from(parts(), { objectMode: false }),
  }
}
