import { ApiError } from '../../contract/errors'
import { jsonTooDeep, malformedJson } from '../../http/body'
import type { RelayRequest } from './wire'

/**
 * Reads a relayed JSON body as its chunks arrive, in one pass over the bytes: it checks that the
 * body is JSON (the grammar JSON.parse accepts), nests no deeper than the limit and is an object,
 * and remembers where the top-level `model`, `stream` and `stream_options` values lie (the last of
 * each, as JSON.parse keeps the last of a duplicated member). Only those spans are ever parsed.
 * The work per chunk is linear in the chunk, so a 60 MB body never holds the event loop for more
 * than a chunk's worth, and nothing is left to do on the whole body when its last byte arrives.
 */

const enum State {
  /** A value is expected (after `:`, after `,` in an array, or at the start). */
  Value,
  /** Just after `[`: a value or `]`. */
  ArrayFirst,
  /** Just after `{`: a key or `}`. */
  KeyOrEnd,
  /** After `,` in an object: a key. */
  Key,
  Colon,
  /** After a value inside a container: `,` or its closing bracket. */
  After,
  Str,
  Escape,
  Hex,
  Num,
  Literal,
  /** The top-level value is complete: only whitespace may follow. */
  End,
}

/** Number phases (JSON's number grammar); the table below moves between them. */
const enum Phase {
  Minus,
  Zero,
  Int,
  Dot,
  Frac,
  Exp,
  ExpSign,
  ExpDigits,
}
const FAIL = -1
const STOP = -2
/** Character classes for the number table: 0, 1-9, `.`, e/E, +/-, anything else. */
const NUMBER_TABLE: readonly (readonly number[])[] = [
  /* Minus */ [Phase.Zero, Phase.Int, FAIL, FAIL, FAIL, FAIL],
  /* Zero */ [STOP, STOP, Phase.Dot, Phase.Exp, STOP, STOP],
  /* Int */ [Phase.Int, Phase.Int, Phase.Dot, Phase.Exp, STOP, STOP],
  /* Dot */ [Phase.Frac, Phase.Frac, FAIL, FAIL, FAIL, FAIL],
  /* Frac */ [Phase.Frac, Phase.Frac, STOP, Phase.Exp, STOP, STOP],
  /* Exp */ [Phase.ExpDigits, Phase.ExpDigits, FAIL, FAIL, Phase.ExpSign, FAIL],
  /* ExpSign */ [Phase.ExpDigits, Phase.ExpDigits, FAIL, FAIL, FAIL, FAIL],
  /* ExpDigits */ [Phase.ExpDigits, Phase.ExpDigits, STOP, STOP, STOP, STOP],
]
/** Phases a number may end in. */
const NUMBER_ENDS = new Set<number>([Phase.Zero, Phase.Int, Phase.Frac, Phase.ExpDigits])

function numberClass(c: number): number {
  if (c === 0x30) return 0
  if (c > 0x30 && c <= 0x39) return 1
  if (c === 0x2e) return 2
  if (c === 0x65 || c === 0x45) return 3
  if (c === 0x2b || c === 0x2d) return 4
  return 5
}

const isSpace = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09
const isHex = (c: number): boolean => (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46)

/** The one-character escapes and what they stand for. */
const ESCAPES: Readonly<Record<number, string>> = {
  0x22: '"',
  0x5c: '\\',
  0x2f: '/',
  0x62: '\b',
  0x66: '\f',
  0x6e: '\n',
  0x72: '\r',
  0x74: '\t',
}

const LITERALS: Readonly<Record<number, Buffer>> = {
  0x74: Buffer.from('true'),
  0x66: Buffer.from('false'),
  0x6e: Buffer.from('null'),
}

/** The top-level members the relay reads, by the index of their span. */
const MEMBERS = ['model', 'stream', 'stream_options'] as const
/** Every member still possible for a key being read, one bit each. */
const ALL_MEMBERS = (1 << MEMBERS.length) - 1

export function notAnObject(): ApiError {
  return new ApiError('bad_input', 'request body must be a JSON object')
}

/** What end() read; `stream_options` is parsed from its own bytes only when asked for (a streamed request's usage). */
class ReadRequest implements RelayRequest {
  constructor(
    readonly model: string | null,
    readonly stream: boolean,
    private readonly body: Buffer,
    private readonly optionsStart: number,
    private readonly optionsEnd: number,
  ) {}

  get streamOptions(): unknown {
    if (this.optionsStart < 0) return undefined
    return JSON.parse(this.body.toString('utf8', this.optionsStart, this.optionsEnd))
  }
}

export class RelayBodyReader {
  private state = State.Value
  /** Bytes read before the current chunk. */
  private offset = 0
  private depth = 0
  /** Whether each open container is an object (1) or an array (0), outermost first. */
  private readonly objects: number[] = []
  private topIsObject = false
  private inKey = false
  private phase = Phase.Minus
  private literal: Buffer = LITERALS[0x74]!
  private literalAt = 0
  private hexLeft = 0
  private hexValue = 0
  /**
   * While a top-level key is read: the MEMBERS it may still be (one bit each) and how many of its
   * characters came so far; -1 for any other key (nothing is compared, nothing allocated).
   */
  private keyMembers = -1
  private keyLength = 0
  /** Which member the value being read belongs to (-1: none). */
  private member = -1
  private valueStart = 0
  /** Where each member's last value lies, [start, end) in the body. */
  /** Where each member's last value lies: start and end in the body, -1 when absent. */
  private readonly spans = [-1, -1, -1, -1, -1, -1]

  constructor(private readonly maxDepth: number) {}

  /** Reads the next chunk of the body; throws a 400 as soon as it is not JSON or nests too deep. */
  feed(chunk: Uint8Array): void {
    const n = chunk.length
    let i = 0
    while (i < n) i = this.step(chunk, i, n)
    this.offset += n
  }

  /** The body ended: what the relay reads of it, or a 400. `body` is every byte fed, in order. */
  end(body: Buffer): RelayRequest {
    if (body.length !== this.offset) throw new Error('RelayBodyReader.end: the body is not what was fed')
    if (this.state === State.Num && this.depth === 0) this.endNumber(this.offset)
    if (this.state !== State.End) throw malformedJson()
    if (!this.topIsObject) throw notAnObject()
    const s = this.spans
    // A string value starts with its quote; a valid value of four bytes starting with `t` is `true`.
    const model = body[s[0]!] === 0x22 ? (JSON.parse(body.toString('utf8', s[0], s[1])) as string) : null
    const stream = s[2]! >= 0 && s[3]! - s[2]! === 4 && body[s[2]!] === 0x74
    return new ReadRequest(model, stream, body, s[4]!, s[5]!)
  }

  /** One step from byte `i`; returns where the next step starts. */
  private step(b: Uint8Array, i: number, n: number): number {
    const c = b[i]!
    switch (this.state) {
      case State.Str:
        return this.string(b, i, n)
      case State.Value:
        return this.value(c, i)
      case State.After:
        return this.after(c, i)
      case State.Num:
        return this.number(c, i)
      case State.Literal:
        return this.literalByte(c, i)
      case State.Colon:
        return this.colon(c, i)
      case State.Escape:
        return this.escape(c, i)
      case State.Hex:
        return this.hex(c, i)
      default:
        return this.structural(c, i)
    }
  }

  /** The states that expect a key, a closing bracket or nothing at all. */
  private structural(c: number, i: number): number {
    if (isSpace(c)) return i + 1
    const state = this.state
    if (state === State.ArrayFirst) return c === 0x5d ? this.close(0, i) : this.value(c, i)
    if (state !== State.End && c === 0x22) return this.openString(true, i)
    if (state === State.KeyOrEnd && c === 0x7d) return this.close(1, i)
    throw malformedJson()
  }

  private value(c: number, i: number): number {
    if (isSpace(c)) return i + 1
    if (this.depth === 1 && this.member >= 0) this.valueStart = this.offset + i
    if (this.depth === 0) this.topIsObject = c === 0x7b
    if (c === 0x7b || c === 0x5b) return this.open(c === 0x7b, i)
    if (c === 0x22) return this.openString(false, i)
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      this.state = State.Num
      this.phase = c === 0x2d ? Phase.Minus : c === 0x30 ? Phase.Zero : Phase.Int
      return i + 1
    }
    const literal = LITERALS[c]
    if (literal === undefined) throw malformedJson()
    this.literal = literal
    this.literalAt = 1
    this.state = State.Literal
    return i + 1
  }

  private open(object: boolean, i: number): number {
    if (this.depth >= this.maxDepth) throw jsonTooDeep(this.maxDepth)
    this.objects[this.depth++] = object ? 1 : 0
    this.state = object ? State.KeyOrEnd : State.ArrayFirst
    return i + 1
  }

  private close(object: 0 | 1, i: number): number {
    if (this.depth === 0 || this.objects[this.depth - 1] !== object) throw malformedJson()
    this.depth--
    this.valueDone(this.offset + i + 1)
    return i + 1
  }

  private after(c: number, i: number): number {
    if (isSpace(c)) return i + 1
    const inObject = this.objects[this.depth - 1] === 1
    if (c === 0x2c) {
      this.state = inObject ? State.Key : State.Value
      return i + 1
    }
    if (c === 0x7d || c === 0x5d) return this.close(c === 0x7d ? 1 : 0, i)
    throw malformedJson()
  }

  private colon(c: number, i: number): number {
    if (isSpace(c)) return i + 1
    if (c !== 0x3a) throw malformedJson()
    this.state = State.Value
    return i + 1
  }

  /** A value ended at `end`: a member the relay reads keeps its span. */
  private valueDone(end: number): void {
    if (this.depth === 0) {
      this.state = State.End
      return
    }
    this.state = State.After
    if (this.depth === 1 && this.member >= 0) {
      this.spans[2 * this.member] = this.valueStart
      this.spans[2 * this.member + 1] = end
      this.member = -1
    }
  }

  private openString(isKey: boolean, i: number): number {
    this.inKey = isKey
    this.keyMembers = isKey && this.depth === 1 ? ALL_MEMBERS : -1
    this.keyLength = 0
    this.state = State.Str
    return i + 1
  }

  /** String content: plain bytes in one tight loop, then the quote, a backslash or a control character. */
  private string(b: Uint8Array, i: number, n: number): number {
    let j = i
    let c = 0
    while (j < n) {
      c = b[j]!
      if (c === 0x22 || c === 0x5c || c < 0x20) break
      j++
    }
    if (this.keyMembers > 0) for (let k = i; k < j && this.keyMembers > 0; k++) this.keyChar(b[k]!)
    if (j === n) return j
    if (c < 0x20) throw malformedJson()
    if (c === 0x5c) {
      this.state = State.Escape
      return j + 1
    }
    this.closeString(j)
    return j + 1
  }

  private closeString(j: number): void {
    if (!this.inKey) return this.valueDone(this.offset + j + 1)
    this.state = State.Colon
    if (this.keyMembers >= 0) this.member = this.keyMember()
  }

  /** The next character of a top-level key: the members it does not match are no longer possible. */
  private keyChar(c: number): void {
    const at = this.keyLength++
    for (let m = 0; m < MEMBERS.length; m++)
      if ((this.keyMembers & (1 << m)) !== 0 && MEMBERS[m]!.charCodeAt(at) !== c) this.keyMembers &= ~(1 << m)
  }

  /** The member a finished top-level key is, or -1. */
  private keyMember(): number {
    for (let m = 0; m < MEMBERS.length; m++)
      if ((this.keyMembers & (1 << m)) !== 0 && MEMBERS[m]!.length === this.keyLength) return m
    return -1
  }

  private escape(c: number, i: number): number {
    if (c === 0x75) {
      this.state = State.Hex
      this.hexLeft = 4
      this.hexValue = 0
      return i + 1
    }
    const s = ESCAPES[c]
    if (s === undefined) throw malformedJson()
    if (this.keyMembers > 0) this.keyChar(s.charCodeAt(0))
    this.state = State.Str
    return i + 1
  }

  private hex(c: number, i: number): number {
    if (!isHex(c)) throw malformedJson()
    this.hexValue = this.hexValue * 16 + parseInt(String.fromCharCode(c), 16)
    if (--this.hexLeft === 0) {
      if (this.keyMembers > 0) this.keyChar(this.hexValue)
      this.state = State.Str
    }
    return i + 1
  }

  private number(c: number, i: number): number {
    const next = NUMBER_TABLE[this.phase]![numberClass(c)]!
    if (next === FAIL) throw malformedJson()
    if (next !== STOP) {
      this.phase = next
      return i + 1
    }
    // The byte after the number belongs to what follows it: read again in that state.
    this.endNumber(this.offset + i)
    return i
  }

  private endNumber(end: number): void {
    if (!NUMBER_ENDS.has(this.phase)) throw malformedJson()
    this.valueDone(end)
  }

  private literalByte(c: number, i: number): number {
    if (c !== this.literal[this.literalAt]) throw malformedJson()
    if (++this.literalAt === this.literal.length) this.valueDone(this.offset + i + 1)
    return i + 1
  }
}
