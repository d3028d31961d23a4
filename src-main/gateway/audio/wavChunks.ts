import fs from 'node:fs'
import type { FormFile, SlicedFile, SpooledFile } from './multipart'

/**
 * Cutting a long recording into diarize chunks (issue 43 #3). Tandem decodes no audio: it cuts PCM
 * WAV (the format every recorder and the asr's own decoder read) at sample-frame boundaries, each
 * piece sent with a WAV header of its own; any other format goes to the asr whole, as one chunk.
 */

/** Seconds of audio per chunk: 5 minutes keeps a chunk well inside what one diarizer pass handles. */
export const CHUNK_S = 300
/** Seconds two neighbouring chunks share, so a word cut by a boundary is heard whole by one of them. */
export const OVERLAP_S = 4
/** A chunk stays under the overlay's 64 MiB chunk cap (DIARIZE_MAX_CHUNK_BYTES) whatever the sample rate. */
export const CHUNK_MAX_BYTES = 48 * 1024 * 1024

export interface WavLayout {
  /** The `fmt ` chunk as sent (its 8-byte head included), copied into every piece's header. */
  readonly fmt: Buffer
  readonly byteRate: number
  readonly blockAlign: number
  readonly dataOffset: number
  readonly dataBytes: number
  readonly seconds: number
}

/** The WAV layout of a spooled file, or null when it is not a PCM-style RIFF/WAVE file we can cut. */
export async function readWavLayout(file: SpooledFile): Promise<WavLayout | null> {
  const fd = await fs.promises.open(file.path, 'r')
  try {
    const head = Buffer.alloc(Math.min(file.size, 64 * 1024))
    await fd.read(head, 0, head.length, 0)
    return parseWavHead(head, file.size)
  } finally {
    await fd.close()
  }
}

/** Parses the RIFF chunks in `head` (the file's first bytes) of a file of `size` bytes. */
export function parseWavHead(head: Buffer, size: number): WavLayout | null {
  if (head.length < 12 || head.toString('ascii', 0, 4) !== 'RIFF' || head.toString('ascii', 8, 12) !== 'WAVE')
    return null
  let fmt: Buffer | null = null
  for (let at = 12; at + 8 <= head.length;) {
    const id = head.toString('ascii', at, at + 4)
    const len = head.readUInt32LE(at + 4)
    if (id === 'fmt ' && at + 8 + len <= head.length && len >= 16) fmt = head.subarray(at, at + 8 + len)
    if (id === 'data') {
      if (!fmt) return null
      const byteRate = fmt.readUInt32LE(16)
      const blockAlign = fmt.readUInt16LE(20)
      if (byteRate <= 0 || blockAlign <= 0) return null
      const dataOffset = at + 8
      // A recorder that never finished its header writes 0 or 0xFFFFFFFF: the data runs to the end.
      const declared = len === 0 || len === 0xffffffff ? size - dataOffset : len
      const dataBytes = Math.max(0, Math.min(declared, size - dataOffset))
      return { fmt: Buffer.from(fmt), byteRate, blockAlign, dataOffset, dataBytes, seconds: dataBytes / byteRate }
    }
    at += 8 + len + (len % 2)
  }
  return null
}

/** One chunk of the recording: what it covers, and the part of it whose words it owns. */
export interface ChunkSpan {
  readonly index: number
  readonly start: number
  readonly end: number
  /** Words whose midpoint lies in [ownFrom, ownTo) belong to this chunk (overlaps are split in half). */
  readonly ownFrom: number
  readonly ownTo: number
}

/** Chunks of at most `chunkS` seconds over `seconds`, neighbours sharing `overlapS`. */
export function planChunks(seconds: number, chunkS = CHUNK_S, overlapS = OVERLAP_S): ChunkSpan[] {
  if (!(seconds > chunkS)) return [{ index: 0, start: 0, end: seconds, ownFrom: -Infinity, ownTo: Infinity }]
  const step = chunkS - overlapS
  const spans: ChunkSpan[] = []
  for (let start = 0; ; start += step) {
    const end = Math.min(seconds, start + chunkS)
    const last = end >= seconds
    spans.push({
      index: spans.length,
      start,
      end,
      ownFrom: spans.length === 0 ? -Infinity : start + overlapS / 2,
      ownTo: last ? Infinity : end - overlapS / 2,
    })
    if (last) return spans
  }
}

/** The chunk length for a layout: CHUNK_S, or less when its bytes per second would pass CHUNK_MAX_BYTES. */
export function chunkSeconds(layout: WavLayout): number {
  return Math.max(10, Math.min(CHUNK_S, Math.floor(CHUNK_MAX_BYTES / layout.byteRate)))
}

/** The bytes of [start, end) seconds as a WAV file of their own, read from the spooled upload. */
export function wavSlice(file: SpooledFile, layout: WavLayout, start: number, end: number): SlicedFile {
  const frame = (s: number): number => Math.floor((s * layout.byteRate) / layout.blockAlign) * layout.blockAlign
  const from = Math.min(frame(start), layout.dataBytes)
  const to = Math.min(frame(end), layout.dataBytes)
  const length = Math.max(0, to - from)
  const header = Buffer.alloc(12 + layout.fmt.length + 8)
  header.write('RIFF', 0, 'ascii')
  header.writeUInt32LE(4 + layout.fmt.length + 8 + length, 4)
  header.write('WAVE', 8, 'ascii')
  layout.fmt.copy(header, 12)
  header.write('data', 12 + layout.fmt.length, 'ascii')
  header.writeUInt32LE(length, 16 + layout.fmt.length)
  return {
    field: file.field,
    filename: file.filename,
    contentType: 'audio/wav',
    path: file.path,
    header,
    offset: layout.dataOffset + from,
    length,
  }
}

/** The file to send for one chunk: the whole upload when it is not cut. */
export function chunkFile(file: SpooledFile, layout: WavLayout | null, span: ChunkSpan, whole: boolean): FormFile {
  return whole || layout === null ? file : wavSlice(file, layout, span.start, span.end)
}
