import { createParser } from 'eventsource-parser'
import { ApiError } from '../contract/errors'
import type { Handlers } from '../contract/define'
import type { gatewayContract } from '../contract/gateway'
import type { ProbeStart } from '../services/types'
import type { ModelLists } from './relay/modelLists'
import type { PlacementUpstreams } from './relay/placementUpstreams'
import type { RequestLog } from './relay/requestLog'
import { parseSpeech, synthesize, type VoiceAliases } from './audio/speech'
import type { UploadSpool } from './audio/spool'
import { transcribeWithSpeakers } from './audio/transcribe'
import { readClip } from './audio/diarizedAsk'
import { fingerprintReferences } from './audio/diarizedAnswer'
import { safeName } from './audio/uploads'
import type { Upstream, UpstreamName } from './relay/upstreams'
import { callUpstream, MiB, readText, upstreamDetail } from './relay/wire'

type PlaygroundHandlers = Pick<
  Handlers<typeof gatewayContract>,
  'playgroundChat' | 'playgroundSpeech' | 'playgroundTranscribe'
>

export interface PlaygroundDeps {
  readonly need: (name: UpstreamName) => Upstream
  readonly lists: ModelLists
  readonly voices: VoiceAliases
  readonly spool: UploadSpool
  /** The gateway's request log: playground calls show there beside LAN clients' requests. */
  readonly log: RequestLog
  /** The placements the /v1 chat routes go to; absent: node1's llm alone. */
  readonly placements?: PlacementUpstreams
  probe(service: 'asr' | 'tts'): (reason: string) => ProbeStart
}

type Recorded = {
  status: number
  bytes: number
  ttfb_ms: number | null
  streamed: boolean
  aborted: boolean
  placement?: string | null
}

/** One playground call as a request-log entry, from its start time and how it ended. */
function record(log: RequestLog, method: string, path: string, t0: number, r: Recorded): void {
  const ms = (t: number): number => Math.round(t * 100) / 100
  log.add({ method, path, latency_ms: ms(performance.now() - t0), playground: true, ...r })
}

function failure(err: unknown, signal: AbortSignal): Pick<Recorded, 'status' | 'aborted'> {
  if (signal.aborted) return { status: 499, aborted: true }
  return { status: err instanceof ApiError ? err.status : 500, aborted: false }
}

/** Records a one-answer playground call; `size` is the answer's bytes as the page receives them. */
function logged<I, O>(
  log: RequestLog,
  path: string,
  size: (out: O) => number,
  fn: (input: I, ctx: { signal: AbortSignal }) => Promise<O>,
): (input: I, ctx: { signal: AbortSignal }) => Promise<O> {
  return async (input, ctx) => {
    const t0 = performance.now()
    try {
      const out = await fn(input, ctx)
      record(log, 'POST', path, t0, { status: 200, bytes: size(out), ttfb_ms: null, streamed: false, aborted: false })
      return out
    } catch (err) {
      record(log, 'POST', path, t0, { ...failure(err, ctx.signal), bytes: 0, ttfb_ms: null, streamed: false })
      throw err
    }
  }
}

/** Records the streamed chat once it ends, fails or the page leaves; first byte = first delta. */
async function* loggedChat(
  log: RequestLog,
  events: AsyncGenerator<ChatEvent>,
  signal: AbortSignal,
): AsyncGenerator<ChatEvent> {
  const t0 = performance.now()
  let ttfb: number | null = null
  let bytes = 0
  let outcome: Pick<Recorded, 'status' | 'aborted'> = { status: 499, aborted: true }
  let placement: string | null = null
  try {
    for await (const ev of events) {
      if (ev.type === 'delta') {
        ttfb ??= Math.round((performance.now() - t0) * 100) / 100
        bytes += Buffer.byteLength(ev.text)
      } else placement = ev.placement
      yield ev
    }
    outcome = { status: 200, aborted: false }
  } catch (err) {
    outcome = failure(err, signal)
    throw err
  } finally {
    const r = { ...outcome, bytes, ttfb_ms: ttfb, streamed: true, placement }
    record(log, 'POST', '/api/gateway/playground/chat', t0, r)
  }
}

/** The Gateway view's playground: the same upstreams the /v1 routes use, one call at a time. */
export function playgroundHandlers(d: PlaygroundDeps): PlaygroundHandlers {
  return {
    playgroundChat: (input, ctx) =>
      loggedChat(
        d.log,
        playgroundChat((signal) => chatTarget(d, input.model, signal), input, ctx.signal),
        ctx.signal,
      ),
    playgroundSpeech: logged(
      d.log,
      '/api/gateway/playground/speech',
      (o) => o.bytes,
      async ({ voice, input, speed }, ctx) => {
        const t0 = performance.now()
        const sp = await d.voices.resolve(parseSpeech({ voice, input, speed }))
        const wav = await synthesize(d.need('tts'), sp, ctx.signal, d.probe('tts'))
        const chunks: Buffer[] = []
        let n = 0
        for await (const c of wav.body as AsyncIterable<Buffer>) {
          n += c.length
          if (n > 32 * MiB) throw new ApiError('payload_too_large', 'the audio is longer than the playground plays')
          chunks.push(c)
        }
        const audio = Buffer.concat(chunks)
        return {
          audio_base64: audio.toString('base64'),
          content_type: 'audio/wav',
          bytes: audio.length,
          latency_ms: Math.round(performance.now() - t0),
        }
      },
    ),
    playgroundTranscribe: logged(
      d.log,
      '/api/gateway/playground/transcribe',
      (o) => Buffer.byteLength(JSON.stringify(o)),
      async ({ audio_base64, filename, known_speakers }, ctx) => {
        const asr = d.need('asr')
        const audio = Buffer.from(audio_base64, 'base64')
        if (audio.length === 0) throw new ApiError('bad_input', 'audio_base64 holds no bytes')
        const refs = known_speakers.map((k, i) =>
          readClip(k.name, `data:application/octet-stream;base64,${k.audio_base64}`, `known_speakers[${i}]`),
        )
        const known = await fingerprintReferences(refs, {
          asr,
          signal: ctx.signal,
          asrModel: () => d.lists.asrModelName(),
          onWedged: d.probe('asr'),
        })
        const lease = await d.spool.writeBuffer(audio)
        try {
          return await transcribeWithSpeakers(
            asr,
            {
              field: 'file',
              filename: safeName(filename),
              contentType: 'application/octet-stream',
              path: lease.path,
              size: audio.length,
            },
            { signal: ctx.signal, asrModel: () => d.lists.asrModelName(), onWedged: d.probe('asr'), known },
          )
        } finally {
          await lease.release()
        }
      },
    ),
  }
}

type ChatEvent =
  | { type: 'delta'; text: string }
  | { type: 'done'; model: string; placement: string | null; chunks: number; ttfb_ms: number | null; total_ms: number }

/** Where one playground chat goes, the `model` it names, and what ends its hold on the placement. */
interface ChatTarget {
  readonly llm: Upstream
  readonly model: string
  readonly placement: string | null
  release(): void
}

/**
 * The placement serving `model`, picked as the /v1 chat route picks (the router's copies, the least
 * busy, held while a placement job touches it); without placements, node1's llm and its first model.
 */
async function chatTarget(d: PlaygroundDeps, model: string | undefined, signal: AbortSignal): Promise<ChatTarget> {
  const p = d.placements
  if (p !== undefined) {
    const route = p.pick(await p.router.admit(model ?? null, signal))
    const llm = p.upstream(route)
    p.begin(route.id)
    return { llm, model: model ?? route.served, placement: route.id, release: () => p.end(route.id) }
  }
  let first = model
  try {
    first ??= (await d.lists.llmModels())[0]?.id
  } catch (err) {
    throw new ApiError('upstream_unreachable', `llm is unreachable: ${(err as Error).message}`)
  }
  if (!first) throw new ApiError('conflict', 'no model is loaded in the llm')
  return { llm: d.need('llm'), model: first, placement: null, release: () => undefined }
}

/** Streams a chat answer for the playground as delta events, from the upstream the /v1 proxy would use. */
async function* playgroundChat(
  target: (signal: AbortSignal) => Promise<ChatTarget>,
  input: { prompt: string; system?: string; max_tokens?: number },
  signal: AbortSignal,
): AsyncGenerator<ChatEvent> {
  const t0 = performance.now()
  const to = await target(signal)
  try {
    yield* chatStream(to, input, signal, t0)
  } finally {
    to.release()
  }
}

async function* chatStream(
  { llm, model, placement }: ChatTarget,
  input: { prompt: string; system?: string; max_tokens?: number },
  signal: AbortSignal,
  t0: number,
): AsyncGenerator<ChatEvent> {
  const messages = [
    ...(input.system ? [{ role: 'system', content: input.system }] : []),
    { role: 'user', content: input.prompt },
  ]
  const res = await callUpstream(llm, {
    method: 'POST',
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: Buffer.from(
      JSON.stringify({ model, messages, stream: true, ...(input.max_tokens ? { max_tokens: input.max_tokens } : {}) }),
    ),
    signal,
  }).catch((err: Error) => {
    throw new ApiError('upstream_unreachable', err.message)
  })
  if (res.status !== 200)
    throw new ApiError('upstream_error', `llm answered HTTP ${res.status}: ${upstreamDetail(await readText(res))}`)
  let ttfb: number | null = null
  let chunks = 0
  let pending: string[] = []
  const parser = createParser({
    onEvent: (event) => {
      const text = deltaText(event.data)
      if (text !== null) pending.push(text)
    },
  })
  // A multi-byte character may be split across chunks: the decoder holds its first bytes back.
  const decoder = new TextDecoder()
  const body = (res.body as AsyncIterable<Buffer>)[Symbol.asyncIterator]()
  for (;;) {
    const next = await body.next().catch(() => {
      throw new ApiError('upstream_error', 'llm closed the stream before it was complete')
    })
    if (next.done === true) break
    parser.feed(decoder.decode(next.value, { stream: true }))
    for (const text of pending) {
      ttfb ??= performance.now() - t0
      chunks++
      yield { type: 'delta', text }
    }
    pending = []
  }
  yield {
    type: 'done',
    model,
    placement,
    chunks,
    ttfb_ms: ttfb === null ? null : Math.round(ttfb),
    total_ms: Math.round(performance.now() - t0),
  }
}

/** The text of one chat completion chunk, or null for `[DONE]`, keep-alives and empty deltas. */
function deltaText(data: string): string | null {
  if (data === '[DONE]') return null
  try {
    const v = JSON.parse(data) as { choices?: { delta?: { content?: unknown } }[] }
    const text = v.choices?.[0]?.delta?.content
    return typeof text === 'string' && text !== '' ? text : null
  } catch {
    return null
  }
}
