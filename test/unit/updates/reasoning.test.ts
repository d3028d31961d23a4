import { describe, expect, it } from 'vitest'
import { ReasoningSplitter, type ChatDelta } from '../../../src-main/updates/reasoning'

function run(deltas: ChatDelta[]): { reasoning: string; answer: string; pieces: number } {
  const s = new ReasoningSplitter()
  const pieces = [...deltas.flatMap((d) => s.feed(d)), ...s.flush()]
  const of = (t: string): string =>
    pieces
      .filter((p) => p.type === t)
      .map((p) => p.text)
      .join('')
  return { reasoning: of('reasoning'), answer: of('answer'), pieces: pieces.length }
}

describe('ReasoningSplitter', () => {
  const text = '<think>The diff touches <b> tags and a < b.</think>\n\nApply it: a <thin> wall & <br> stay.'
  const reasoning = 'The diff touches <b> tags and a < b.'
  const answer = 'Apply it: a <thin> wall & <br> stay.'

  it('splits <think> spans at every possible cut into two chunks', () => {
    for (let i = 0; i <= text.length; i++) {
      const r = run([{ content: text.slice(0, i) }, { content: text.slice(i) }])
      expect({ i, reasoning: r.reasoning, answer: r.answer }).toEqual({ i, reasoning, answer })
    }
  })

  it('splits them when every character is its own chunk', () => {
    expect(run([...text].map((c) => ({ content: c })))).toMatchObject({ reasoning, answer })
  })

  it('keeps reasoning_content (and reasoning) deltas apart from the content', () => {
    const r = run([
      { reasoning_content: 'First ' },
      { reasoning: 'thoughts.' },
      { content: 'The answer' },
      { content: ' is short.', reasoning_content: '' },
    ])
    expect(r).toMatchObject({ reasoning: 'First thoughts.', answer: 'The answer is short.' })
  })

  it('gives back a held tail that never became a tag', () => {
    expect(run([{ content: 'compare x <' }, { content: 'th' }])).toMatchObject({
      reasoning: '',
      answer: 'compare x <th',
    })
  })

  it('an unclosed <think> is all reasoning', () => {
    expect(run([{ content: '<think>still thinking</th' }])).toMatchObject({
      reasoning: 'still thinking</th',
      answer: '',
    })
  })
})
