import type http from 'node:http'
import { PassThrough, Transform } from 'node:stream'
import { z } from 'zod'
import { ApiError } from '../../contract/errors'
import { DiarizedTranscript } from '../../contract/gateway'
import type { HttpAnswer } from '../../lib/httpClient'
import type { Logger } from '../../lib/logger'
import { probeWording, type ProbeStart } from '../../services/types'
import { encodeMultipart, moreThanOneFile, scanForFilePart, secondFileWatch, type FormFile } from './multipart'
import { guardIdle, idleTimeout, tooLarge } from './uploads'
import type { Upstream } from '../relay/upstreams'
import { groupWordsWork, type SpeakerBlock } from './words'
import { finishSliced } from '../scrub/scrubDetect'
import {
  callUpstream,
  passHeaders,
  pipeResponse,
  readText,
  upstreamDetail,
  upstreamJson,
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
  const ac = new AbortController()
  const idle = guardIdle(req, opts.idleMs, () => ac.abort(idleTimeout(opts.idleMs)))
  const onClientGone = (): void => {
    if (!res.writableFinished) ac.abort(new ClientGone())
  }
  res.once('close', onClientGone)
  const timer = setTimeout(
    () => ac.abort(new ApiError('upstream_timeout', 'asr did not answer in time', { status: 504 })),
    opts.timeoutMs,
  )
  timer.unref()
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
    const status = upRes.status
    if (status >= 500) throw asrWedged(status, upstreamDetail(await readText(upRes).catch(() => '')), opts.onWedged)
    if (status >= 400) throw asrRefused(status, await readText(upRes).catch(() => ''))
    res.writeHead(status, passHeaders(upRes))
    opts.usage?.watchBody(upRes.body)
    await pipeResponse(upRes.body, res)
  } finally {
    idle.dispose()
    clearTimeout(timer)
    res.off('close', onClientGone)
    if (body && !req.complete) req.unpipe(body)
  }
}

const AsrWords = z.object({
  text: z.string().optional(),
  language: z.string().optional(),
  duration: z.number().optional(),
  model: z.string().optional(),
  words: z.array(z.object({ word: z.string(), start: z.number(), end: z.number() })),
})

const Diarization = z.object({
  duration: z.number().optional(),
  segments: z.array(z.object({ start_s: z.number(), end_s: z.number(), speaker: z.string() })),
  models: z.object({ diarization: z.string().optional() }).partial().optional(),
})

export type DiarizedTranscript = z.infer<typeof DiarizedTranscript>

/**
 * Spec 1, 4.8: transcription with word timestamps and diarization run in parallel on the same
 * file (on disk, streamed twice), then words are given to speakers and grouped into blocks.
 */
export async function transcribeWithSpeakers(
  asr: Upstream,
  file: FormFile,
  opts: {
    language?: string
    signal: AbortSignal
    asrModel: () => Promise<string | null>
    onWedged(reason: string): ProbeStart
  },
): Promise<DiarizedTranscript> {
  const ac = new AbortController()
  const onAbort = (): void => ac.abort(opts.signal.reason)
  opts.signal.addEventListener('abort', onAbort, { once: true })
  const call = async <T>(path: string, fields: [string, string][], schema: z.ZodType<T>): Promise<T> => {
    const form = encodeMultipart(fields, file)
    const { value } = await upstreamJson(asr, {
      method: 'POST',
      path,
      headers: { 'content-type': form.contentType, 'content-length': form.length, accept: 'application/json' },
      body: form.body,
      signal: ac.signal,
    })
    const parsed = schema.safeParse(value)
    if (!parsed.success)
      throw new UpstreamStatus(
        asr,
        502,
        `unexpected answer from ${path}: ${parsed.error.issues[0]?.message ?? 'invalid'}`,
      )
    return parsed.data
  }
  const fields: [string, string][] = [
    ['response_format', 'verbose_json'],
    ['timestamp_granularities[]', 'word'],
    ['timestamp_granularities[]', 'segment'],
  ]
  if (opts.language) fields.push(['language', opts.language])
  try {
    const [words, diar, model] = await Promise.all([
      call('/v1/audio/transcriptions', fields, AsrWords),
      call('/v1/audio/diarize-chunk', [], Diarization),
      opts.asrModel(),
    ])
    const turns = diar.segments.map((s) => ({ start: s.start_s, end: s.end_s, speaker: s.speaker }))
    const grouped: { segments: SpeakerBlock[]; speakers: string[] } = await finishSliced(
      groupWordsWork(words.words, turns),
    )
    return {
      duration: words.duration ?? diar.duration ?? 0,
      language: words.language ?? opts.language ?? 'unknown',
      speakers_detected: grouped.speakers,
      segments: grouped.segments,
      models: { transcription: words.model ?? model ?? 'unknown', diarization: diar.models?.diarization ?? 'unknown' },
    }
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
