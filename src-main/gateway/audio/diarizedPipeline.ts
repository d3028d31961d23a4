import { z } from 'zod'
import type { ProbeStart } from '../../services/types'
import { encodeMultipart, type FormFile, type SpooledFile } from './multipart'
import type { Upstream } from '../relay/upstreams'
import { upstreamJson, UpstreamStatus } from '../relay/wire'
import { finishSliced } from '../scrub/scrubDetect'
import { VoiceBook, type ChunkSpeaker, type KnownVoice, type LabelStyle } from './voiceBook'
import { chunkFile, chunkSeconds, OVERLAP_S, planChunks, readWavLayout, type ChunkSpan } from './wavChunks'
import { groupWordsWork, SILENCE_GAP_S, type TimedWord } from './words'

/**
 * The diarized pipeline (spec 1, 4.8 rules 1–2), the one behind `/api/audio/transcribe-with-speakers`,
 * the playground and `/v1/audio/transcriptions` with `diarized_json`: the recording is cut into chunks
 * (wavChunks.ts); per chunk the asr's word timestamps and the diarizer's turns are asked for in
 * parallel; the chunk's speakers are matched to the recording's voices by fingerprint (voiceBook.ts);
 * words go to speakers by timestamp and are grouped into blocks. A block that reaches the end of a chunk
 * is held until the next chunk says whether its speaker goes on.
 */

const AsrWords = z.object({
  text: z.string().optional(),
  language: z.string().optional(),
  duration: z.number().optional(),
  model: z.string().optional(),
  words: z.array(z.object({ word: z.string(), start: z.number(), end: z.number() })),
})

export const DiarizeChunkAnswer = z.object({
  duration: z.number().optional(),
  segments: z.array(z.object({ start_s: z.number(), end_s: z.number(), speaker: z.string() })),
  fingerprints: z.record(z.string(), z.array(z.number()).nullable()).optional(),
  models: z.object({ diarization: z.string().optional() }).partial().optional(),
})
export type DiarizeChunkAnswer = z.infer<typeof DiarizeChunkAnswer>

/** A block of one speaker's words; times in seconds. */
export interface DiarizedBlock {
  start: number
  end: number
  speaker: string
  text: string
}

export interface DiarizedRun {
  readonly duration: number
  readonly language: string
  readonly models: { transcription: string; diarization: string }
  readonly blocks: DiarizedBlock[]
}

export interface PipelineOptions {
  readonly language?: string
  readonly signal: AbortSignal
  asrModel(): Promise<string | null>
  onWedged(reason: string): ProbeStart
  readonly known?: readonly KnownVoice[]
  readonly style: LabelStyle
  /** Blocks as they become final, chunk by chunk (a stream writes them out). */
  onBlocks?(blocks: readonly DiarizedBlock[]): void | Promise<void>
}

/** Posts one file as a multipart form to the asr and parses its JSON answer (502 when it is not the shape). */
export async function askAsr<T>(
  asr: Upstream,
  path: string,
  fields: readonly (readonly [string, string])[],
  file: FormFile,
  schema: z.ZodType<T>,
  signal: AbortSignal,
): Promise<T> {
  const form = encodeMultipart(fields, file)
  const { value } = await upstreamJson(asr, {
    method: 'POST',
    path,
    headers: { 'content-type': form.contentType, 'content-length': form.length, accept: 'application/json' },
    body: form.body,
    signal,
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

/** The chunk's speakers with their fingerprints and seconds of speech. */
export function chunkSpeakers(diar: DiarizeChunkAnswer): ChunkSpeaker[] {
  const seconds = new Map<string, number>()
  for (const s of diar.segments)
    seconds.set(s.speaker, (seconds.get(s.speaker) ?? 0) + Math.max(0, s.end_s - s.start_s))
  return [...seconds].map(([label, secs]) => ({
    label,
    seconds: secs,
    fingerprint: diar.fingerprints?.[label] ?? null,
  }))
}

/** Runs the pipeline over a spooled recording; the blocks in time order, labels stable across chunks. */
export async function runDiarized(asr: Upstream, file: SpooledFile, opts: PipelineOptions): Promise<DiarizedRun> {
  const layout = await readWavLayout(file)
  const spans = layout ? planChunks(layout.seconds, chunkSeconds(layout), OVERLAP_S) : planChunks(0)
  const book = new VoiceBook(opts.known ?? [], opts.style)
  const blocks = new HeldBlocks(opts.onBlocks)
  const fields: [string, string][] = [
    ['response_format', 'verbose_json'],
    ['timestamp_granularities[]', 'word'],
    ['timestamp_granularities[]', 'segment'],
  ]
  if (opts.language) fields.push(['language', opts.language])
  let head: Pick<DiarizedRun, 'language' | 'models'> | null = null
  let end = 0
  for (const span of spans) {
    const part = chunkFile(file, layout, span, spans.length === 1)
    const { words, diar, model } = await askChunk(asr, part, fields, opts, head === null)
    head ??= runHead(words, diar, model, opts.language)
    end = Math.max(end, span.start + (words.duration ?? diar.duration ?? span.end - span.start))
    await blocks.add(await chunkBlocks(span, words.words, diar, book))
  }
  return { duration: layout?.seconds ?? end, ...head!, blocks: await blocks.finish() }
}

/** One chunk's word timestamps and diarization, asked for in parallel (rule 1), and the asr's model name once. */
async function askChunk(
  asr: Upstream,
  part: FormFile,
  fields: readonly (readonly [string, string])[],
  opts: PipelineOptions,
  withModel: boolean,
): Promise<{ words: z.infer<typeof AsrWords>; diar: DiarizeChunkAnswer; model: string | null }> {
  const [words, diar, model] = await Promise.all([
    askAsr(asr, '/v1/audio/transcriptions', fields, part, AsrWords, opts.signal),
    askAsr(asr, '/v1/audio/diarize-chunk', [], part, DiarizeChunkAnswer, opts.signal),
    withModel ? opts.asrModel() : Promise.resolve(null),
  ])
  return { words, diar, model }
}

function runHead(
  words: z.infer<typeof AsrWords>,
  diar: DiarizeChunkAnswer,
  model: string | null,
  language: string | undefined,
): Pick<DiarizedRun, 'language' | 'models'> {
  return {
    language: words.language ?? language ?? 'unknown',
    models: { transcription: words.model ?? model ?? 'unknown', diarization: diar.models?.diarization ?? 'unknown' },
  }
}

/**
 * The blocks so far, the last one held back: a block that reaches the end of a chunk goes on in
 * the next when the same speaker continues within the silence gap.
 */
class HeldBlocks {
  private readonly done: DiarizedBlock[] = []
  private held: DiarizedBlock | null = null

  constructor(private readonly onBlocks: PipelineOptions['onBlocks']) {}

  async add(chunk: DiarizedBlock[]): Promise<void> {
    const held = this.held
    const first = chunk[0]
    if (held && first && first.speaker === held.speaker && first.start - held.end <= SILENCE_GAP_S)
      chunk[0] = { ...first, start: held.start, text: `${held.text} ${first.text}` }
    else if (held) chunk.unshift(held)
    this.held = chunk.pop() ?? null
    await this.emit(chunk)
  }

  async finish(): Promise<DiarizedBlock[]> {
    if (this.held) await this.emit([this.held])
    this.held = null
    return this.done
  }

  private async emit(blocks: DiarizedBlock[]): Promise<void> {
    if (blocks.length === 0) return
    this.done.push(...blocks)
    await this.onBlocks?.(blocks)
  }
}

/** One chunk's words and turns on the recording's clock, its speakers matched, grouped into blocks. */
async function chunkBlocks(
  span: ChunkSpan,
  raw: readonly TimedWord[],
  diar: DiarizeChunkAnswer,
  book: VoiceBook,
): Promise<DiarizedBlock[]> {
  const voices = book.match(chunkSpeakers(diar))
  const words = raw
    .map((w) => ({ word: w.word, start: w.start + span.start, end: w.end + span.start }))
    .filter((w) => {
      const mid = (w.start + w.end) / 2
      return mid >= span.ownFrom && mid < span.ownTo
    })
  const turns = diar.segments.map((s) => ({
    start: s.start_s + span.start,
    end: s.end_s + span.start,
    speaker: voices.get(s.speaker)!,
  }))
  // Words no turn covers (a diarizer that heard no one) are one voice's for the whole recording.
  const labelOf = (id: string): string => book.labelOf(id === '__single__' ? book.fallbackVoice() : id)
  const grouped = await finishSliced(groupWordsWork(words, turns, SILENCE_GAP_S, labelOf))
  return grouped.segments.map((s) => ({
    start: s.start_ms / 1000,
    end: s.end_ms / 1000,
    speaker: s.speaker,
    text: s.text,
  }))
}
