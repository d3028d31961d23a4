import type http from 'node:http'
import { ApiError } from '../../contract/errors'
import { sendJson } from '../../http/respond'
import type { ProbeStart } from '../../services/types'
import type { Upstream } from '../relay/upstreams'
import type { UsageMeter } from '../relay/usageMeter'
import { checkClipLength, type DiarizedAsk, type ReferenceClip } from './diarizedAsk'
import { askAsr, chunkSpeakers, DiarizeChunkAnswer, type DiarizedBlock, type DiarizedRun } from './diarizedPipeline'
import type { SpooledFile } from './multipart'
import { diarize, mapAsrError } from './transcribe'
import type { KnownVoice } from './voiceBook'
import { joinTokens } from './words'
import { toSrt, toVtt } from '../../../src-shared/captions'

/**
 * `/v1/audio/transcriptions` answered by the diarized pipeline in OpenAI's shapes (openai 6.29.0's
 * `TranscriptionDiarized`, `TranscriptionTextSegmentEvent`, `TranscriptionTextDoneEvent`): JSON,
 * text, SRT and WebVTT with the speaker in each cue, or server-sent events as each chunk is done.
 */

export interface DiarizedDeps {
  readonly asr: Upstream
  readonly signal: AbortSignal
  asrModel(): Promise<string | null>
  onWedged(reason: string): ProbeStart
  readonly usage?: UsageMeter
}

export interface OpenAiSegment {
  type: 'transcript.text.segment'
  id: string
  start: number
  end: number
  speaker: string
  text: string
}

const seconds3 = (s: number): number => Math.round(s * 1000) / 1000

export function openAiSegment(b: DiarizedBlock, n: number): OpenAiSegment {
  return {
    type: 'transcript.text.segment',
    id: `seg_${n}`,
    start: seconds3(b.start),
    end: seconds3(b.end),
    speaker: b.speaker,
    text: b.text,
  }
}

/** Answers a diarized request: references fingerprinted first, then the pipeline, then the format asked for. */
export async function answerDiarized(
  res: http.ServerResponse,
  file: SpooledFile,
  ask: DiarizedAsk,
  d: DiarizedDeps,
): Promise<void> {
  const known = await fingerprintReferences(ask.references, d)
  const stream = ask.stream ? sseWriter(res) : null
  let run: DiarizedRun
  try {
    run = await diarize(d.asr, file, {
      language: ask.language,
      signal: d.signal,
      asrModel: d.asrModel,
      onWedged: d.onWedged,
      known,
      style: 'letters',
      onBlocks: stream ? (blocks) => stream.segments(blocks) : undefined,
    })
  } catch (err) {
    if (stream?.started) return stream.fail(err)
    throw err
  }
  d.usage?.addAudioSeconds(run.duration)
  const text = joinTokens(run.blocks.map((b) => b.text))
  const usage = { type: 'duration' as const, seconds: Math.ceil(run.duration) }
  if (stream) return stream.done(text, usage)
  if (ask.format === 'diarized_json')
    return sendJson(res, 200, {
      task: 'transcribe',
      duration: seconds3(run.duration),
      text,
      segments: run.blocks.map(openAiSegment),
      usage,
    })
  if (ask.format === 'json') return sendJson(res, 200, { text, usage })
  const body = ask.format === 'srt' ? toSrt(run.blocks) : ask.format === 'vtt' ? toVtt(run.blocks) : text
  const type = ask.format === 'vtt' ? 'text/vtt' : 'text/plain'
  res.writeHead(200, { 'content-type': `${type}; charset=utf-8`, 'content-length': Buffer.byteLength(body) })
  res.end(body)
}

/**
 * Each reference clip's voice fingerprint, by the asr's diarize-chunk embedding: the fingerprint of
 * the speaker heard longest in the clip. A clip whose length only the asr's decoder can tell is
 * checked against 2–10 s here.
 */
export async function fingerprintReferences(refs: readonly ReferenceClip[], d: DiarizedDeps): Promise<KnownVoice[]> {
  const out: KnownVoice[] = []
  for (const ref of refs) {
    let diar: DiarizeChunkAnswer
    try {
      diar = await askAsr(
        d.asr,
        '/v1/audio/diarize-chunk',
        [],
        { field: 'file', filename: `reference-${out.length}`, contentType: ref.mime, bytes: ref.bytes },
        DiarizeChunkAnswer,
        d.signal,
      )
    } catch (err) {
      throw mapAsrError(err, d.onWedged)
    }
    if (ref.seconds === null && diar.duration !== undefined) checkClipLength(diar.duration, ref.param)
    const voice = chunkSpeakers(diar)
      .filter((s) => s.fingerprint && s.fingerprint.length > 0)
      .sort((a, b) => b.seconds - a.seconds)[0]
    if (!voice)
      throw new ApiError('bad_input', `${ref.param}: no voice was heard in the reference clip`, { param: ref.param })
    out.push({ name: ref.name, fingerprint: voice.fingerprint! })
  }
  return out
}

/**
 * Server-sent events in OpenAI's transcription stream: one `transcript.text.segment` per block as
 * its chunk is done, then `transcript.text.done`. The head is written with the first event, so a
 * refusal before any (a wedged asr on the first chunk) is still a plain error answer.
 */
function sseWriter(res: http.ServerResponse) {
  let n = 0
  let started = false
  const send = async (event: string, data: unknown): Promise<void> => {
    if (!started) {
      started = true
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
      })
    }
    if (!res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)) await new Promise((r) => res.once('drain', r))
  }
  return {
    get started() {
      return started
    },
    async segments(blocks: readonly DiarizedBlock[]): Promise<void> {
      for (const b of blocks) await send('transcript.text.segment', openAiSegment(b, n++))
    },
    async done(text: string, usage: { type: 'duration'; seconds: number }): Promise<void> {
      await send('transcript.text.done', { type: 'transcript.text.done', text, usage })
      res.end()
    },
    /** A failure after the first event: one `error` event in OpenAI's error shape, then the end. */
    fail(err: unknown): void {
      const e = err instanceof ApiError ? err : new ApiError('internal', 'the diarized transcription failed')
      res.write(
        `event: error\ndata: ${JSON.stringify({ error: { message: e.message, type: 'server_error', code: e.code, param: null } })}\n\n`,
      )
      res.end()
    },
  }
}
