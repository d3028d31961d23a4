import type http from 'node:http'
import { PassThrough, Transform } from 'node:stream'
import { z } from 'zod'
import { ApiError } from '../../contract/errors'
import { DiarizedTranscript } from '../../contract/gateway'
import type { HttpAnswer } from '../../lib/httpClient'
import type { Logger } from '../../lib/logger'
import { probeWording, type ProbeStart } from '../../services/types'
import { encodeMultipart, moreThanOneFile, scanForFilePart, secondFileWatch, type SpooledFile } from './multipart'
import { guardIdle, idleTimeout, tooLarge } from './uploads'
import type { Upstream } from '../relay/upstreams'
import { runDiarized, type DiarizedRun, type PipelineOptions } from './diarizedPipeline'
import type { KnownVoice } from './voiceBook'
import { readWavLayout } from './wavChunks'
import {
  callUpstream,
  passHeaders,
  pipeResponse,
  readText,
  upstreamDetail,
  UpstreamStatus,
  UpstreamUnreachable,
} from '../relay/wire'
import { ClientGone } from '../../http/body'
import type { UsageMeter } from '../relay/usageMeter'

/** The error for an asr that answered 5xx (spec 1, 7): 503, Retry-After 60, and a probe is asked for. */
export function asrWedged(status: number, detail: string, onWedged: (reason: string) => ProbeStart): ApiError {
  const probe = onWedged(`asr answered HTTP ${status}: ${detail}`)
  return new ApiError(
    'unavailable',
    `asr failed (HTTP ${status}: ${detail}); ${probeWording('asr', probe)}, retry in 60 s`,
    {
      headers: { 'Retry-After': '60' },
    },
  )
}

export interface RelayOptions {
  readonly path: string
  readonly maxBytes: number
  /** No upload bytes for this long → 408 (see guardIdle). */
  readonly idleMs: number
  readonly timeoutMs: number
  readonly logger: Logger
  onWedged(reason: string): ProbeStart
  /** Reads the answer's `duration` (verbose_json) for usage accounting. */
  readonly usage?: UsageMeter
}

/** The asr's own refusal (4xx) in the route's error shape: its detail is the message (and OpenAI's `detail` beside it). */
export function asrRefused(status: number, text: string): ApiError {
  return new ApiError('upstream_error', upstreamDetail(text), { status })
}

/**
 * Relays a multipart upload to the asr byte for byte (every field, repeated ones included),
 * streaming: only the text fields before the file part are held while busboy checks that a
 * `file` is present. A body without one, or compressed, is refused before anything goes upstream;
 * a second file part stops the relay as it passes (400).
 */
export async function relayUpload(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  asr: Upstream,
  opts: RelayOptions,
): Promise<void> {
  const declared = Number(req.headers['content-length'] ?? NaN)
  if (Number.isFinite(declared) && declared > opts.maxBytes) throw tooLarge(opts.maxBytes)
  const { ac, dispose } = relayAbort(res, opts.timeoutMs)
  const idle = guardIdle(req, opts.idleMs, () => ac.abort(idleTimeout(opts.idleMs)))
  let body: PassThrough | null = null
  try {
    const head = await scanForFilePart(req, { signal: ac.signal })
    let sent = 0
    let overLimit = false
    const files = secondFileWatch(req.headers, () => ac.abort(moreThanOneFile()))
    const counter = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        sent += chunk.length
        if (sent > opts.maxBytes) {
          overLimit = true
          ac.abort(tooLarge(opts.maxBytes))
          return cb(tooLarge(opts.maxBytes))
        }
        files.write(chunk)
        cb(null, chunk)
      },
      flush(cb) {
        files.end()
        cb()
      },
    })
    body = new PassThrough({ highWaterMark: 256 * 1024 })
    body.pipe(counter)
    for (const c of head) body.write(c)
    req.pipe(body)
    req.resume()

    const headers: Record<string, string | number | undefined> = {
      'content-type': req.headers['content-type'],
      accept: 'application/json',
    }
    if (Number.isFinite(declared)) headers['content-length'] = declared
    let upRes: HttpAnswer
    try {
      upRes = await callUpstream(asr, { method: 'POST', path: opts.path, headers, body: counter, signal: ac.signal })
    } catch (err) {
      if (overLimit) throw tooLarge(opts.maxBytes)
      if (err instanceof UpstreamUnreachable) throw new ApiError('upstream_unreachable', err.message)
      throw err
    }
    await answerFromAsr(res, upRes, opts)
  } finally {
    idle.dispose()
    dispose()
    if (body && !req.complete) req.unpipe(body)
  }
}

/**
 * Relays a form received into the spool to the asr: every text field in the order sent (repeated
 * ones included) and the file streamed from disk, in a multipart body of Tandem's own framing. The
 * asr's answer goes back as it is; its 5xx is the 503 of spec 1, 7. A `json` or `text` answer says
 * no duration: the usage counts a WAV upload's own length then.
 */
export async function relaySpooled(
  res: http.ServerResponse,
  asr: Upstream,
  form: { readonly entries: readonly (readonly [string, string])[]; readonly file: SpooledFile },
  opts: Omit<RelayOptions, 'maxBytes' | 'idleMs'>,
): Promise<void> {
  if (opts.usage) opts.usage.uploadAudioSeconds((await readWavLayout(form.file))?.seconds ?? 0)
  const { ac, dispose } = relayAbort(res, opts.timeoutMs)
  try {
    const body = encodeMultipart(form.entries, form.file)
    const headers = { 'content-type': body.contentType, 'content-length': body.length, accept: 'application/json' }
    let upRes: HttpAnswer
    try {
      upRes = await callUpstream(asr, { method: 'POST', path: opts.path, headers, body: body.body, signal: ac.signal })
    } catch (err) {
      if (err instanceof UpstreamUnreachable) throw new ApiError('upstream_unreachable', err.message)
      throw err
    }
    await answerFromAsr(res, upRes, opts)
  } finally {
    dispose()
  }
}

/** The abort of a relayed call: the client going away, or the asr taking longer than `timeoutMs` (504). */
function relayAbort(res: http.ServerResponse, timeoutMs: number): { ac: AbortController; dispose(): void } {
  const ac = new AbortController()
  const onClientGone = (): void => {
    if (!res.writableFinished) ac.abort(new ClientGone())
  }
  res.once('close', onClientGone)
  const timer = setTimeout(
    () => ac.abort(new ApiError('upstream_timeout', 'asr did not answer in time', { status: 504 })),
    timeoutMs,
  )
  timer.unref()
  return {
    ac,
    dispose() {
      clearTimeout(timer)
      res.off('close', onClientGone)
    },
  }
}

/** The asr's answer to a relayed upload: 5xx → 503 + probe, 4xx → its refusal, else passed on as it is. */
async function answerFromAsr(
  res: http.ServerResponse,
  upRes: HttpAnswer,
  opts: Pick<RelayOptions, 'onWedged' | 'usage'>,
): Promise<void> {
  const status = upRes.status
  if (status >= 500) throw asrWedged(status, upstreamDetail(await readText(upRes).catch(() => '')), opts.onWedged)
  if (status >= 400) throw asrRefused(status, await readText(upRes).catch(() => ''))
  res.writeHead(status, passHeaders(upRes))
  opts.usage?.watchBody(upRes.body)
  await pipeResponse(upRes.body, res)
}

export type DiarizedTranscript = z.infer<typeof DiarizedTranscript>

/**
 * Spec 1, 4.8: the diarized pipeline (diarizedPipeline.ts) over an upload on disk, in Tandem's own
 * shape: `Speaker_<n>` labels in order of first speech, times in milliseconds.
 */
export async function transcribeWithSpeakers(
  asr: Upstream,
  file: SpooledFile,
  opts: {
    language?: string
    signal: AbortSignal
    asrModel: () => Promise<string | null>
    onWedged(reason: string): ProbeStart
    /** Voices to call by name (the playground's reference clips). */
    known?: readonly KnownVoice[]
  },
): Promise<DiarizedTranscript> {
  const run = await diarize(asr, file, { ...opts, style: 'numbered' })
  return {
    duration: run.duration,
    language: run.language,
    speakers_detected: [...new Set(run.blocks.map((b) => b.speaker))],
    segments: run.blocks.map((b) => ({
      start_ms: Math.round(b.start * 1000),
      end_ms: Math.round(b.end * 1000),
      speaker: b.speaker,
      text: b.text,
    })),
    models: run.models,
  }
}

/** runDiarized with one abort for all its upstream calls, and its upstream failures as API errors. */
export async function diarize(asr: Upstream, file: SpooledFile, opts: PipelineOptions): Promise<DiarizedRun> {
  const ac = new AbortController()
  const onAbort = (): void => ac.abort(opts.signal.reason)
  if (opts.signal.aborted) onAbort()
  opts.signal.addEventListener('abort', onAbort, { once: true })
  try {
    return await runDiarized(asr, file, { ...opts, signal: ac.signal })
  } catch (err) {
    ac.abort(err)
    throw mapAsrError(err, opts.onWedged)
  } finally {
    opts.signal.removeEventListener('abort', onAbort)
  }
}

/** Upstream failures of the speech pipeline as API errors: 5xx → 503 + probe, unreachable → 502. */
export function mapAsrError(err: unknown, onWedged: (reason: string) => ProbeStart): unknown {
  if (err instanceof UpstreamStatus) {
    if (err.status >= 500 && err.status !== 502) return asrWedged(err.status, err.detail, onWedged)
    return new ApiError('upstream_error', `asr: ${err.detail}`)
  }
  if (err instanceof UpstreamUnreachable) return new ApiError('upstream_unreachable', err.message)
  return err
}
