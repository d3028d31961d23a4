import { describe, expect, it } from 'vitest'
import { groupWords, joinTokens, speakerAt } from '../../../src-main/gateway/words'

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
