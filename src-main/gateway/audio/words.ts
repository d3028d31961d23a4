import { drain, type Work } from '../scrub/scrubDetect'

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
 * The speaker of each word: the turn containing its midpoint, else the turn overlapping it most,
 * else the nearest turn in time; on a tie the turn that starts first (the earlier one in the
 * diarizer's answer when two start together). Null without turns. Turns are sorted by start once
 * and indexed, so a word costs O(log turns) at most, and O(1) when it falls in the same turn as
 * the word before: never words × turns (issue 33 #3: the old scan of every turn for every word
 * blocked the event loop for seconds on long recordings).
 * Turns that end before they start, and words without finite times, get no speaker.
 */
export function assignSpeakers(words: readonly TimedWord[], turns: readonly SpeakerTurn[]): (string | null)[] {
  return drain(assignSpeakersWork(words, turns))
}

/** assignSpeakers as sliced work: pauses every SLICE_WORDS words. */
function* assignSpeakersWork(words: readonly TimedWord[], turns: readonly SpeakerTurn[]): Work<(string | null)[]> {
  const table = turnTable(turns)
  yield
  const speakers: (string | null)[] = []
  // Turns before `after` start at or before the midpoint; `running` is the first of them still
  // running there (== after when none is). Kept from the word before while still true, which is
  // the rule for words in time order; searched for otherwise.
  let after = 0
  let running = 0
  let lastMid = -Infinity
  for (const { start, end } of words) {
    if (speakers.length % SLICE_WORDS === SLICE_WORDS - 1) yield
    const mid = (start + end) / 2
    if (table.size === 0 || !Number.isFinite(mid)) {
      speakers.push(null)
      continue
    }
    const stillTrue =
      mid >= lastMid &&
      (after === table.size || table.start[after]! > mid) &&
      (running === after || table.end[running]! >= mid)
    if (!stillTrue) {
      after = firstAbove(table.start, mid, false)
      running = table.ends.firstAtLeast(0, after, mid)
    }
    lastMid = mid
    const turn = running < after ? running : (mostOverlap(table, start, end, after) ?? nearest(table, mid, after))
    speakers.push(table.speaker[turn]!)
  }
  return speakers
}

/** One word's speaker (see assignSpeakers). */
export function speakerAt(word: TimedWord, turns: readonly SpeakerTurn[]): string | null {
  return assignSpeakers([word], turns)[0] ?? null
}

interface TurnTable {
  readonly size: number
  readonly start: Float64Array
  readonly end: Float64Array
  readonly speaker: readonly string[]
  /** For each i, the first turn with the latest end among turns 0..i. */
  readonly latestEnd: Int32Array
  readonly lengths: RangeMax
  readonly ends: RangeMax
}

function turnTable(turns: readonly SpeakerTurn[]): TurnTable {
  // Each turn is read once, into typed arrays; the order is sorted as indices (stable on equal starts).
  const rawStart = Float64Array.from(turns, (t) => t.start)
  const rawEnd = Float64Array.from(turns, (t) => t.end)
  const order = Int32Array.from(turns.keys())
    .filter((i) => Number.isFinite(rawStart[i]!) && Number.isFinite(rawEnd[i]!) && rawEnd[i]! >= rawStart[i]!)
    .sort((a, b) => rawStart[a]! - rawStart[b]! || a - b)
  const start = Float64Array.from(order, (i) => rawStart[i]!)
  const end = Float64Array.from(order, (i) => rawEnd[i]!)
  const latestEnd = new Int32Array(order.length)
  for (let i = 1; i < order.length; i++) latestEnd[i] = end[i]! > end[latestEnd[i - 1]!]! ? i : latestEnd[i - 1]!
  return {
    size: order.length,
    start,
    end,
    speaker: Array.from(order, (i) => turns[i]!.speaker),
    latestEnd,
    lengths: new RangeMax(Float64Array.from(order, (i) => rawEnd[i]! - rawStart[i]!)),
    ends: new RangeMax(end),
  }
}

/** First index in the sorted `values` whose value is above `x` (or at least `x` when `orEqual`). */
function firstAbove(values: Float64Array, x: number, orEqual: boolean): number {
  let lo = 0
  let hi = values.length
  while (lo < hi) {
    const m = (lo + hi) >>> 1
    if (values[m]! > x || (orEqual && values[m] === x)) hi = m
    else lo = m + 1
  }
  return lo
}

/**
 * The turn overlapping the word most, when no turn contains its midpoint (so turns before `after`
 * all end before the midpoint and the others start after it). The candidates, in turn order:
 * the latest-ending turn that starts before the word, the longest turn inside its first half, the
 * longest inside its second half, and the first turn that reaches past its end.
 */
function mostOverlap(t: TurnTable, start: number, end: number, after: number): number | null {
  if (!(end > start)) return null
  const inside = firstAbove(t.start, start, false)
  const beyond = Math.max(after, firstAbove(t.start, end, true))
  const reaching = t.ends.firstAtLeast(after, beyond, end)
  // Candidates in turn order, so the strict `>` keeps the first on a tie.
  let best = -1
  let most = 0
  if (inside > 0 && t.end[t.latestEnd[inside - 1]!]! - start > most) {
    best = t.latestEnd[inside - 1]!
    most = t.end[best]! - start
  }
  for (const [from, to] of [
    [inside, after],
    [after, reaching],
  ] as const) {
    if (to <= from) continue
    const longest = t.lengths.argmax(from, to)
    if (t.lengths.at(longest) > most) [best, most] = [longest, t.lengths.at(longest)]
  }
  if (reaching < beyond && end - t.start[reaching]! > most) best = reaching
  return best < 0 ? null : best
}

/** The nearest turn to a midpoint no turn contains: the latest end before it or the first start after. */
function nearest(t: TurnTable, mid: number, after: number): number {
  if (after === 0) return 0
  const before = t.latestEnd[after - 1]!
  if (after === t.size) return before
  return t.start[after]! - mid < mid - t.end[before]! ? after : before
}

/**
 * Segment tree over a list of values: the greatest value over an index range, the first on ties,
 * and the first index from some point on whose value reaches a bound; O(log n) each, 2–4 n
 * integers of memory (a diarizer answer may list hundreds of thousands of turns).
 */
class RangeMax {
  /** Leaves at [width, width + n): their index; each node: its children's argmax; -1 = none. */
  private readonly tree: Int32Array
  private readonly width: number

  constructor(private readonly values: Float64Array) {
    let width = 1
    while (width < values.length) width *= 2
    this.width = width
    this.tree = new Int32Array(2 * width).fill(-1)
    for (let i = 0; i < values.length; i++) this.tree[width + i] = i
    for (let node = width - 1; node >= 1; node--)
      this.tree[node] = this.pick(this.tree[2 * node]!, this.tree[2 * node + 1]!)
  }

  /** Of two indices, `left` before `right`: the one with the greater value, `left` on a tie. */
  private pick(left: number, right: number): number {
    if (left < 0) return right
    if (right < 0) return left
    return this.values[right]! > this.values[left]! ? right : left
  }

  private maxOf(node: number): number {
    const i = this.tree[node]!
    return i < 0 ? -Infinity : this.values[i]!
  }

  at(i: number): number {
    return this.values[i]!
  }

  /** Index of the greatest value in [from, to), from < to. */
  argmax(from: number, to: number): number {
    let fromLeft = -1
    let fromRight = -1
    for (let l = from + this.width, r = to + this.width; l < r; l >>= 1, r >>= 1) {
      if (l & 1) fromLeft = this.pick(fromLeft, this.tree[l++]!)
      if (r & 1) fromRight = this.pick(this.tree[--r]!, fromRight)
    }
    return this.pick(fromLeft, fromRight)
  }

  /** First index in [from, to) whose value is at least x, else `to`. */
  firstAtLeast(from: number, to: number, x: number): number {
    // The nodes covering [from, to), in index order: left-side ones as met, right-side ones reversed.
    const leftSide: number[] = []
    const rightSide: number[] = []
    for (let l = from + this.width, r = to + this.width; l < r; l >>= 1, r >>= 1) {
      if (l & 1) leftSide.push(l++)
      if (r & 1) rightSide.push(--r)
    }
    let node = [...leftSide, ...rightSide.reverse()].find((n) => this.maxOf(n) >= x)
    if (node === undefined) return to
    while (node < this.width) node = this.maxOf(2 * node) >= x ? 2 * node : 2 * node + 1
    return node - this.width
  }
}

/** `Speaker_<n>` labels, numbered from 1 in order of first speech. */
export function speakerLabels(order: readonly string[]): Map<string, string> {
  const map = new Map<string, string>()
  for (const raw of order) if (!map.has(raw)) map.set(raw, `Speaker_${map.size + 1}`)
  return map
}

/** Words between two pauses of the grouping: a slice takes a few milliseconds. */
export const SLICE_WORDS = 16 * 1024

/** Words given to speakers and grouped into blocks (see groupWordsWork), at once. */
export function groupWords(
  words: readonly TimedWord[],
  turns: readonly SpeakerTurn[],
  gapS = SILENCE_GAP_S,
): { segments: SpeakerBlock[]; speakers: string[] } {
  return drain(groupWordsWork(words, turns, gapS))
}

/**
 * Gives words to speakers and groups them into blocks, pausing every SLICE_WORDS words so a long
 * recording (a 2 GiB upload is some 170,000 words) never holds the event loop for long; drive it
 * with finishSliced.
 */
export function* groupWordsWork(
  words: readonly TimedWord[],
  turns: readonly SpeakerTurn[],
  gapS = SILENCE_GAP_S,
  /** Names a turn's speaker; by default `Speaker_<n>` in order of first speech. A chunked recording passes its voice book's. */
  labelOf?: (raw: string) => string,
): Work<{ segments: SpeakerBlock[]; speakers: string[] }> {
  const sorted = words.filter((w) => Number.isFinite(w.start) && Number.isFinite(w.end))
  yield
  // The asr answers in time order: then the check is the whole cost.
  if (!sorted.every((w, i) => i === 0 || sorted[i - 1]!.start <= w.start)) {
    sorted.sort((a, b) => a.start - b.start)
    yield
  }
  const raw = (yield* assignSpeakersWork(sorted, turns)).map((s) => s ?? '__single__')
  const numbered = labelOf ? null : speakerLabels(raw)
  const label = labelOf ?? ((r: string): string => numbered!.get(r)!)
  yield
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
  for (const [i, w] of sorted.entries()) {
    if (i % SLICE_WORDS === SLICE_WORDS - 1) yield
    const speaker = label(raw[i]!)
    if (cur && (cur.speaker !== speaker || w.start - cur.end > gapS)) flush()
    if (!cur) cur = { start: w.start, end: w.end, speaker }
    cur.end = Math.max(cur.end, w.end)
    tokens.push(w.word)
  }
  flush()
  return { segments, speakers: [...new Set(segments.map((s) => s.speaker))] }
}
