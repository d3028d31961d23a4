import type { z } from 'zod'
import type { ExplainChunk } from '../contract/services'

type Piece = Extract<z.infer<typeof ExplainChunk>, { type: 'reasoning' | 'answer' }>

const OPEN = '<think>'
const CLOSE = '</think>'

/** One streamed delta of an OpenAI-compatible chat completion, as far as reasoning is concerned. */
export interface ChatDelta {
  content?: unknown
  /** vLLM's reasoning parser (older name). */
  reasoning_content?: unknown
  /** vLLM's reasoning parser (newer name). */
  reasoning?: unknown
}

/**
 * Keeps a model's reasoning apart from its answer: reasoning arrives either as its own delta field
 * or inside `<think>…</think>` in the content, and a tag may be cut anywhere between two chunks, so
 * a tail that could be the start of a tag is held back until the next chunk decides it.
 */
export class ReasoningSplitter {
  private thinking = false
  private held = ''
  /** Models put blank lines after `</think>`; the answer starts at its first visible character. */
  private afterThink = false

  feed(delta: ChatDelta): Piece[] {
    const out: Piece[] = []
    const field = typeof delta.reasoning_content === 'string' ? delta.reasoning_content : delta.reasoning
    if (typeof field === 'string' && field !== '') push(out, 'reasoning', field)
    if (typeof delta.content === 'string' && delta.content !== '') this.content(delta.content, out)
    return out
  }

  /** Whatever was held back (a tail that never became a tag), at the end of the stream. */
  flush(): Piece[] {
    const out: Piece[] = []
    if (this.held !== '') push(out, this.thinking ? 'reasoning' : 'answer', this.held)
    this.held = ''
    return out
  }

  private content(text: string, out: Piece[]): void {
    let buf = this.held + text
    this.held = ''
    for (;;) {
      const tag = this.thinking ? CLOSE : OPEN
      const at = buf.indexOf(tag)
      if (at >= 0) {
        this.emit(out, buf.slice(0, at))
        this.thinking = !this.thinking
        this.afterThink = !this.thinking
        buf = buf.slice(at + tag.length)
        continue
      }
      const keep = partialTagTail(buf, tag)
      this.emit(out, buf.slice(0, buf.length - keep))
      this.held = buf.slice(buf.length - keep)
      return
    }
  }

  private emit(out: Piece[], text: string): void {
    if (this.thinking) return push(out, 'reasoning', text)
    if (this.afterThink) {
      text = text.replace(/^\s+/, '')
      if (text !== '') this.afterThink = false
    }
    push(out, 'answer', text)
  }
}

/** Length of the longest suffix of `text` that is a proper prefix of `tag`. */
function partialTagTail(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) if (tag.startsWith(text.slice(-n))) return n
  return 0
}

/** Appends text, merging it into the previous piece of the same type. */
function push(out: Piece[], type: Piece['type'], text: string): void {
  if (text === '') return
  const last = out[out.length - 1]
  if (last && last.type === type) last.text += text
  else out.push({ type, text })
}
