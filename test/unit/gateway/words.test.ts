import { describe, expect, it } from 'vitest'
import {
  assignSpeakers,
  groupWords,
  groupWordsWork,
  SLICE_WORDS,
  joinTokens,
  speakerAt,
  type SpeakerTurn,
  type TimedWord,
} from '../../../src-main/gateway/audio/words'

describe('joinTokens (spec 1, 4.8 rule 2)', () => {
  it('joins with single spaces and no space before punctuation', () => {
    expect(joinTokens(['Hello', ',', 'world', '.', 'Ready', '?', 'Yes', ':', 'go', '!'])).toBe(
      'Hello, world. Ready? Yes: go!',
    )
  })
  it('works whether or not tokens carry leading whitespace', () => {
    expect(joinTokens([' Hello', ' ,', ' world', ' .'])).toBe('Hello, world.')
    expect(joinTokens(['  Hello  ', '\tworld', ' ', ''])).toBe('Hello world')
  })
  it('keeps punctuation attached inside a token', () => {
    expect(joinTokens(['node2', 'is', 'up.', "It's", 'fine', '...'])).toBe("node2 is up. It's fine...")
  })
  it('attaches closing brackets and percent signs', () => {
    expect(joinTokens(['load', '(', '93', '%', ')'])).toBe('load ( 93%)')
  })
})

describe('speakerAt', () => {
  const turns = [
    { start: 0, end: 2, speaker: 'a' },
    { start: 3, end: 5, speaker: 'b' },
  ]
  it('uses the turn containing the word midpoint', () => {
    expect(speakerAt({ word: 'x', start: 1.8, end: 2.4 }, turns)).toBe('a')
    expect(speakerAt({ word: 'x', start: 2.4, end: 3.8 }, turns)).toBe('b')
  })
  it('falls back to the nearest turn', () => {
    expect(speakerAt({ word: 'x', start: 2.1, end: 2.3 }, turns)).toBe('a')
    expect(speakerAt({ word: 'x', start: 9, end: 9.5 }, turns)).toBe('b')
  })
  it('is null without turns', () => {
    expect(speakerAt({ word: 'x', start: 0, end: 1 }, [])).toBeNull()
  })
})

describe('groupWords', () => {
  const w = (word: string, start: number, end = start + 0.3) => ({ word, start, end })
  it('splits blocks at speaker changes and at silences over 1.5 s', () => {
    const words = [
      w(' Hi', 0),
      w(' ,', 0.4),
      w(' there', 0.8),
      w(' Yes', 2),
      w(' .', 2.3),
      w(' Later', 4.2),
      w(' on', 4.6),
    ]
    const turns = [
      { start: 0, end: 1.2, speaker: 'spk_7' },
      { start: 1.9, end: 5, speaker: 'spk_2' },
    ]
    const out = groupWords(words, turns)
    expect(out.speakers).toEqual(['Speaker_1', 'Speaker_2'])
    expect(out.segments).toEqual([
      { start_ms: 0, end_ms: 1100, speaker: 'Speaker_1', text: 'Hi, there' },
      { start_ms: 2000, end_ms: 2600, speaker: 'Speaker_2', text: 'Yes.' },
      // 2.6 → 4.2 is a 1.6 s gap: same speaker, new block.
      { start_ms: 4200, end_ms: 4900, speaker: 'Speaker_2', text: 'Later on' },
    ])
  })
  it('keeps a gap of exactly 1.5 s in one block', () => {
    const out = groupWords([w('a', 0, 1), w('b', 2.5, 3)], [{ start: 0, end: 3, speaker: 's' }])
    expect(out.segments).toHaveLength(1)
  })
  it('sorts words by time and gives all to one speaker without diarization', () => {
    const out = groupWords([w('two', 1), w('one', 0)], [])
    expect(out.segments).toEqual([{ start_ms: 0, end_ms: 1300, speaker: 'Speaker_1', text: 'one two' }])
  })
})

/** The scan issue 33 #3 replaced (every turn for every word), kept as the reference for equal answers. */
function referenceSpeakerAt(word: TimedWord, turns: readonly SpeakerTurn[]): string | null {
  if (turns.length === 0) return null
  const mid = (word.start + word.end) / 2
  let best: SpeakerTurn | null = null
  let bestOverlap = 0
  let nearest: SpeakerTurn = turns[0]!
  let nearestDist = Infinity
  for (const t of turns) {
    if (mid >= t.start && mid <= t.end) return t.speaker
    const overlap = Math.min(word.end, t.end) - Math.max(word.start, t.start)
    if (overlap > bestOverlap) [bestOverlap, best] = [overlap, t]
    const dist = mid < t.start ? t.start - mid : mid - t.end
    if (dist < nearestDist) [nearestDist, nearest] = [dist, t]
  }
  return (best ?? nearest).speaker
}

/** Deterministic PRNG (mulberry32), so a failure can be replayed from its seed. */
function prng(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Times on a 1/8 s grid: exact in binary, so ties between turns really happen and must break alike. */
function randomCase(seed: number): { words: TimedWord[]; turns: SpeakerTurn[] } {
  const rnd = prng(seed)
  const at = (span: number): number => Math.floor(rnd() * span * 8) / 8
  const span = 2 + at(60)
  const words = Array.from({ length: Math.floor(rnd() * 40) }, (_, i) => {
    const start = at(span)
    // Mostly ordinary words; some zero-length, some reversed, some long enough to span turns.
    const len = rnd() < 0.1 ? -at(1) : rnd() < 0.2 ? at(8) : at(1)
    return { word: `w${i}`, start, end: start + len }
  })
  const turns = Array.from({ length: Math.floor(rnd() * 12) }, (_, i) => {
    const start = at(span)
    return { start, end: start + (rnd() < 0.2 ? 0 : at(span / 3)), speaker: `s${i % 4}` }
  })
  return { words, turns }
}

const byStart = (turns: readonly SpeakerTurn[]): SpeakerTurn[] => [...turns].sort((a, b) => a.start - b.start)

describe('assignSpeakers (issue 33 #3)', () => {
  it('answers as the word-by-turn scan did, on 3,000 random cases with overlapping turns and words', () => {
    for (let seed = 1; seed <= 3000; seed++) {
      const { words, turns } = randomCase(seed)
      const expected = words.map((w) => referenceSpeakerAt(w, byStart(turns)))
      expect(assignSpeakers(words, turns), `seed ${seed}`).toEqual(expected)
    }
  })

  it('does not depend on the order the diarizer lists turns with distinct starts in', () => {
    for (let seed = 1; seed <= 500; seed++) {
      const { words, turns: all } = randomCase(seed)
      const turns = all.filter((t, i) => all.findIndex((u) => u.start === t.start) === i)
      const shuffled = [...turns].reverse()
      expect(assignSpeakers(words, shuffled), `seed ${seed}`).toEqual(assignSpeakers(words, byStart(turns)))
    }
  })

  it('ignores turns that end before they start', () => {
    const turns = [
      { start: 5, end: 1, speaker: 'broken' },
      { start: 8, end: 9, speaker: 'b' },
    ]
    expect(speakerAt({ word: 'x', start: 2, end: 3 }, turns)).toBe('b')
  })

  /** Turns and words whose times count their reads: what a word × turn scan cannot hide. */
  function counted<T extends { start: number; end: number }>(items: readonly T[], reads: number[]): T[] {
    return items.map((item, i) => {
      const copy = { ...item }
      for (const key of ['start', 'end'] as const) {
        const value = item[key]
        Object.defineProperty(copy, key, {
          get: () => {
            reads[i] = (reads[i] ?? 0) + 1
            return value
          },
        })
      }
      return copy
    })
  }

  it('reads each turn and each word a bounded number of times, however many there are of the other', () => {
    for (const [nWords, nTurns] of [
      [200, 50],
      [4000, 1000],
    ] as const) {
      const words = Array.from({ length: nWords }, (_, i) => ({ word: `w${i}`, start: i * 0.4, end: i * 0.4 + 0.3 }))
      // Turns with gaps between them, so words also take the overlap and nearest-turn paths.
      const turns = Array.from({ length: nTurns }, (_, i) => ({
        start: i * 1.6 + 0.5,
        end: i * 1.6 + 1.3,
        speaker: `s${i % 3}`,
      }))
      const turnReads: number[] = []
      const wordReads: number[] = []
      const speakers = assignSpeakers(counted(words, wordReads), counted(turns, turnReads))
      expect(speakers.every((s) => s !== null)).toBe(true)
      expect(Math.max(...turnReads)).toBeLessThanOrEqual(2)
      expect(Math.max(...wordReads)).toBeLessThanOrEqual(8)
      const groupTurnReads: number[] = []
      groupWords(words, counted(turns, groupTurnReads))
      expect(Math.max(...groupTurnReads)).toBeLessThanOrEqual(2)
    }
  })
})

describe('groupWordsWork (issue 33 #3)', () => {
  it('pauses at least once every SLICE_WORDS words, and answers as groupWords', () => {
    const n = 3 * SLICE_WORDS + 5
    const words = Array.from({ length: n }, (_, i) => ({ word: `w${i}`, start: i * 0.4, end: i * 0.4 + 0.3 }))
    const turns = Array.from({ length: Math.floor(n / 20) }, (_, i) => ({
      start: i * 8,
      end: i * 8 + 7,
      speaker: `s${i % 2}`,
    }))
    const work = groupWordsWork(words, turns)
    let pauses = 0
    let step = work.next()
    for (; !step.done; step = work.next()) pauses += 1
    // Once per slice while speakers are given, once per slice while blocks are built.
    expect(pauses).toBeGreaterThanOrEqual(2 * Math.floor(n / SLICE_WORDS))
    expect(step.value).toEqual(groupWords(words, turns))
    expect(step.value.segments.length).toBeGreaterThan(1)
  })
})
