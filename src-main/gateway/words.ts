/**
 * Diarized transcription (spec 1, 4.8): words from the asr are given to speakers by timestamp and
 * grouped into blocks that end at a speaker change or a silence gap over 1.5 s.
 */
export interface TimedWord {
  readonly word: string
  /** Seconds. */
  readonly start: number
  readonly end: number
}

export interface SpeakerTurn {
  readonly start: number
  readonly end: number
  readonly speaker: string
}

export interface SpeakerBlock {
  start_ms: number
  end_ms: number
  speaker: string
  text: string
}

export const SILENCE_GAP_S = 1.5

/** A token attaches to the one before it (no space) when it starts with closing punctuation. */
const ATTACHES = /^[.,:;!?%…)\]}»”’]/

/** Strips each token and joins them with single spaces, with no space before punctuation (rule 2). */
export function joinTokens(tokens: readonly string[]): string {
  let out = ''
  for (const raw of tokens) {
    const t = raw.trim()
    if (t === '') continue
    out += out === '' || ATTACHES.test(t) ? t : ` ${t}`
  }
  return out
}

/**
 * The speaker of a word: the turn containing its midpoint, else the turn overlapping it most,
 * else the nearest turn in time. Null when there are no turns at all.
 */
export function speakerAt(word: TimedWord, turns: readonly SpeakerTurn[]): string | null {
  if (turns.length === 0) return null
  const mid = (word.start + word.end) / 2
  let best: SpeakerTurn | null = null
  let bestOverlap = 0
  let nearest: SpeakerTurn = turns[0]!
  let nearestDist = Infinity
  for (const t of turns) {
    if (mid >= t.start && mid <= t.end) return t.speaker
    const overlap = Math.min(word.end, t.end) - Math.max(word.start, t.start)
    if (overlap > bestOverlap) {
      bestOverlap = overlap
      best = t
    }
    const dist = mid < t.start ? t.start - mid : mid - t.end
    if (dist < nearestDist) {
      nearestDist = dist
      nearest = t
    }
  }
  return (best ?? nearest).speaker
}

/** `Speaker_<n>` labels, numbered from 1 in order of first speech. */
export function speakerLabels(order: readonly string[]): Map<string, string> {
  const map = new Map<string, string>()
  for (const raw of order) if (!map.has(raw)) map.set(raw, `Speaker_${map.size + 1}`)
  return map
}

export function groupWords(
  words: readonly TimedWord[],
  turns: readonly SpeakerTurn[],
  gapS = SILENCE_GAP_S,
): { segments: SpeakerBlock[]; speakers: string[] } {
  const sorted = [...words]
    .filter((w) => Number.isFinite(w.start) && Number.isFinite(w.end))
    .sort((a, b) => a.start - b.start)
  const raw = sorted.map((w) => speakerAt(w, turns) ?? '__single__')
  const labels = speakerLabels(raw)
  const segments: SpeakerBlock[] = []
  let tokens: string[] = []
  let cur: { start: number; end: number; speaker: string } | null = null
  const flush = (): void => {
    if (cur && tokens.length > 0) {
      const text = joinTokens(tokens)
      if (text !== '')
        segments.push({
          start_ms: Math.round(cur.start * 1000),
          end_ms: Math.round(cur.end * 1000),
          speaker: cur.speaker,
          text,
        })
    }
    tokens = []
    cur = null
  }
  sorted.forEach((w, i) => {
    const speaker = labels.get(raw[i]!)!
    if (cur && (cur.speaker !== speaker || w.start - cur.end > gapS)) flush()
    if (!cur) cur = { start: w.start, end: w.end, speaker }
    cur.end = Math.max(cur.end, w.end)
    tokens.push(w.word)
  })
  flush()
  return { segments, speakers: [...new Set(segments.map((s) => s.speaker))] }
}
