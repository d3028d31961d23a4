/**
 * Subtitles of a diarized transcript, the speaker in each cue: SRT and WebVTT. Pure, so the
 * gateway's `/v1/audio/transcriptions` and the dashboard's playground downloads write the same text.
 */

/** One speaker's words; times in seconds. */
export interface CaptionBlock {
  readonly start: number
  readonly end: number
  readonly speaker: string
  readonly text: string
}

/** `HH:MM:SS,mmm` (SRT) or `HH:MM:SS.mmm` (WebVTT). */
function clock(s: number, sep: ',' | '.'): string {
  const ms = Math.max(0, Math.round(s * 1000))
  const p = (n: number, w = 2): string => String(n).padStart(w, '0')
  return `${p(Math.floor(ms / 3_600_000))}:${p(Math.floor(ms / 60_000) % 60)}:${p(Math.floor(ms / 1000) % 60)}${sep}${p(ms % 1000, 3)}`
}

/** SubRip cues, the speaker in brackets before the text (SRT has no voice markup). */
export function toSrt(blocks: readonly CaptionBlock[]): string {
  return blocks
    .map((b, i) => `${i + 1}\n${clock(b.start, ',')} --> ${clock(b.end, ',')}\n[${b.speaker}] ${b.text}\n`)
    .join('\n')
}

/** WebVTT cues with the speaker as a voice span (`<v A>`), the format's own way to say who speaks. */
export function toVtt(blocks: readonly CaptionBlock[]): string {
  const esc = (t: string): string => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
  const cues = blocks.map(
    (b) => `${clock(b.start, '.')} --> ${clock(b.end, '.')}\n<v ${esc(b.speaker)}>${esc(b.text)}\n`,
  )
  return ['WEBVTT\n', ...cues].join('\n')
}
