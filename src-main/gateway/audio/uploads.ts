import type http from 'node:http'
import { Transform, type Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { FileInfo } from 'busboy'
import { ApiError } from '../../contract/errors'
import { ClientGone } from '../../http/body'
import { releaseBodyDeadline } from '../../http/bodyDeadline'
import { moreThanOneFile, openMultipart, type SpooledFile } from './multipart'
import type { SpoolLease } from './spool'
import { MiB } from '../relay/wire'

export interface UploadLimits {
  /** Largest upload body (413 beyond). */
  readonly maxBytes: number
  /** No bytes for this long while the upload is being read → 408, and everything is freed. */
  readonly idleMs: number
}

export function tooLarge(max: number): ApiError {
  return new ApiError('payload_too_large', `upload is larger than ${Math.round(max / MiB)} MiB`)
}

export function idleTimeout(ms: number): ApiError {
  return new ApiError('request_timeout', `no upload bytes arrived for ${ms / 1000} s; the upload was dropped`, {
    status: 408,
  })
}

/**
 * Takes an upload route off the server's whole-body deadline (an upload may take hours) and puts it
 * on an idle timeout: `onIdle` runs when no bytes arrived for `ms` while the request was being read.
 * Time the request spends paused by us (backpressure from the disk or the asr) does not count.
 */
export function guardIdle(req: http.IncomingMessage, ms: number, onIdle: () => void): { dispose(): void } {
  releaseBodyDeadline(req)
  let timer: NodeJS.Timeout | null = null
  const stop = (): void => {
    if (timer) clearTimeout(timer)
    timer = null
  }
  const arm = (): void => {
    stop()
    if (req.complete || req.isPaused()) return
    timer = setTimeout(onIdle, ms)
    timer.unref()
  }
  const dispose = (): void => {
    stop()
    req.off('data', arm)
    req.off('resume', arm)
    req.off('pause', stop)
    req.off('end', dispose)
    req.off('close', dispose)
  }
  req.on('data', arm)
  req.on('resume', arm)
  req.on('pause', stop)
  req.once('end', dispose)
  req.once('close', dispose)
  arm()
  return { dispose }
}

/** A form received into the spool: its `file` part on disk, and its text fields. */
export interface ReceivedForm {
  readonly file: SpooledFile
  /** The last value of each text field. */
  readonly fields: ReadonlyMap<string, string>
  /** Every text field in the order sent, repeated names included (what a relay passes on). */
  readonly entries: readonly (readonly [string, string])[]
}

/** How many text fields a form may carry, and how long one may be. */
export interface FormFieldLimits {
  readonly fields: number
  readonly fieldSize: number
  /** All text fields together (they are held in memory). */
  readonly totalFieldBytes: number
}

const SMALL_FORM: FormFieldLimits = { fields: 10, fieldSize: 64 * 1024, totalFieldBytes: 640 * 1024 }

/**
 * Streams a multipart request into the spool: the `file` part goes to the lease's file as it
 * arrives (the budget and the disk floor are charged on the way), text fields are kept (small).
 * Rejects with 400, 408, 413, 503 or 507; the caller releases the lease whatever happens.
 */
export function receiveForm(
  req: http.IncomingMessage,
  lease: SpoolLease,
  limits: UploadLimits,
  field = 'file',
  formLimits: FormFieldLimits = SMALL_FORM,
): Promise<ReceivedForm> {
  const bb = openMultipart(req.headers, {
    fileSize: limits.maxBytes,
    files: 1,
    fields: formLimits.fields,
    fieldSize: formLimits.fieldSize,
    parts: formLimits.fields + 2,
  })
  const fields = new Map<string, string>()
  const entries: [string, string][] = []
  let fieldBytes = 0
  let file: { info: FileInfo; written: Promise<void> } | null = null
  return new Promise<ReceivedForm>((resolve, reject) => {
    let settled = false
    const fail = (err: unknown): void => {
      if (settled) return
      settled = true
      idle.dispose()
      req.unpipe(bb)
      bb.destroy()
      reject(err)
    }
    const idle = guardIdle(req, limits.idleMs, () => fail(idleTimeout(limits.idleMs)))
    bb.on('field', (name: string, value: string, info: { valueTruncated: boolean }) => {
      if (info.valueTruncated)
        return fail(new ApiError('bad_input', `multipart field '${name}' is too long`, { param: name }))
      fieldBytes += value.length
      if (fieldBytes > formLimits.totalFieldBytes)
        return fail(new ApiError('bad_input', 'the form’s text fields are larger than an upload takes'))
      fields.set(name, value)
      entries.push([name, value])
    })
    bb.on('file', (name: string, stream: Readable, info: FileInfo) => {
      if (name !== field || file) return void stream.resume()
      stream.once('limit', () => fail(tooLarge(limits.maxBytes)))
      file = { info, written: pipeline(stream, charging(lease), lease.createWriteStream()) }
      file.written.catch(fail)
    })
    bb.on('filesLimit', () => fail(moreThanOneFile()))
    for (const what of ['partsLimit', 'fieldsLimit'] as const)
      bb.on(what, () => fail(new ApiError('bad_input', 'the form has more parts than an upload takes')))
    bb.on('error', (err: Error) => fail(new ApiError('bad_input', `unreadable multipart body: ${err.message}`)))
    bb.on('close', () => {
      if (settled) return
      const got = file
      if (!got) return fail(new ApiError('bad_input', `multipart field '${field}' is required`))
      got.written.then(() => {
        if (settled) return
        settled = true
        idle.dispose()
        resolve({ file: formFile(field, got.info, lease), fields, entries })
      }, fail)
    })
    req.once('close', () => {
      if (!req.complete) fail(new ClientGone())
    })
    req.pipe(bb)
  })
}

/** Passes bytes on while charging them to the lease (budget, disk floor). */
function charging(lease: SpoolLease): Transform {
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      lease.grow(chunk.length).then(
        () => cb(null, chunk),
        (err: unknown) => cb(err as Error),
      )
    },
  })
}

function formFile(field: string, info: FileInfo, lease: SpoolLease): SpooledFile {
  return {
    field,
    filename: safeName(info.filename),
    contentType: info.mimeType || 'application/octet-stream',
    path: lease.path,
    size: lease.size,
  }
}

/** A client's file name as the asr may see it: a base name of safe characters. */
export function safeName(name: string | undefined): string {
  const base = (name ?? '').split(/[\\/]/).pop() ?? ''
  const n = base.replace(/[^\w. -]/g, '_').slice(0, 128)
  return n === '' || n === '.' || n === '..' ? 'audio' : n
}
