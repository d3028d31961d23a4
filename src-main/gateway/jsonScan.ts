/**
 * A JSON text read once, byte by byte, without building it: whether it is valid (exactly as
 * `JSON.parse` decides for the same bytes decoded as UTF-8), how deep it nests, and where the
 * values of chosen top-level members are. The relay needs three members of a request (`model`,
 * `stream`, `stream_options`) and one or two of an answer (`usage`, `duration`); parsing the
 * whole text built every string and object of it only to read those, and in the running daemon,
 * where the parser is cold between requests, that cost about 10 µs a request
 * (docs/gateway-profile.md, fifth pass).
 *
 * Bytes of 0x80 and above are accepted inside strings only, as `JSON.parse` accepts any character
 * there (invalid UTF-8 decodes to U+FFFD, a character like any other) and none outside them.
 */

/** Where the values of wanted members are: per member, in the order asked, `[start, end)` or -1, -1. */
export interface MemberSpans {
  readonly spans: number[]
}

/** What one scan found. */
export interface JsonScan extends MemberSpans {
  /** Null when the text is valid JSON; otherwise why not (`malformed` or `too_deep`). */
  readonly error: 'malformed' | 'too_deep' | null
  /** The text is a JSON object (members are only looked for in one). */
  readonly isObject: boolean
  /**
   * Per wanted member, in the order asked: the `[start, end)` byte range of the value of its last
   * occurrence at the top level (as `JSON.parse` keeps the last of duplicate keys), or -1, -1.
   */
  readonly spans: number[]
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OBJECT = 1
const ARRAY = 2

/**
 * Which container each open level is, shared by every scan; a text nested deeper gets a larger
 * copy for its own scan, so one deep answer does not leave a large buffer behind.
 */
const SHARED_KINDS = new Uint8Array(64)
/** Set by scanString and stringStartBefore: the string just read held an escape (a key must then be decoded to compare). */
let escaped = false

/**
 * Scans `buf` as one JSON value with at most `maxDepth` nested arrays and objects. `wanted` are
 * the member names to locate at the top level, as UTF-8 bytes.
 */
export function scanJson(buf: Uint8Array, maxDepth: number, wanted: readonly Uint8Array[]): JsonScan {
  const spans = noSpans(wanted.length)
  const n = buf.length
  let i = skipSpace(buf, 0)
  const isObject = i < n && buf[i] === 0x7b
  let depth = 0
  let kinds: Uint8Array = SHARED_KINDS
  /** Index in `wanted` of the top-level member whose value is being read; -1 when none is. */
  let member = -1
  let valueStart = -1
  let error: JsonScan['error'] = 'malformed'
  scan: for (;;) {
    // A value is expected at i.
    if (i >= n) break
    const c = buf[i]!
    if (c === 0x7b || c === 0x5b) {
      if (++depth > maxDepth) {
        error = 'too_deep'
        break
      }
      if (depth >= kinds.length) kinds = grow(kinds)
      kinds[depth] = c === 0x7b ? OBJECT : ARRAY
      i = skipSpace(buf, i + 1)
      if (i < n && buf[i] === (c === 0x7b ? 0x7d : 0x5d)) {
        depth--
        i++
      } else if (c === 0x5b) continue
      else {
        i = readMemberName(buf, i, depth === 1 && isObject, wanted)
        if (i < 0) break
        if (depth === 1) {
          member = keyIndex
          valueStart = i
        }
        continue
      }
    } else if (c === QUOTE) i = scanString(buf, i)
    else if (c === 0x2d || isDigit(c)) i = scanNumber(buf, i)
    else if (c === 0x74) i = literal(buf, i, TRUE)
    else if (c === 0x66) i = literal(buf, i, FALSE)
    else if (c === 0x6e) i = literal(buf, i, NULL)
    else break
    if (i < 0) break
    // A value ended at i: close every container that ends here, then expect `,` or the end.
    for (;;) {
      if (depth === 1 && member >= 0) {
        spans[member * 2] = valueStart
        spans[member * 2 + 1] = i
        member = -1
      }
      i = skipSpace(buf, i)
      if (depth === 0) {
        if (i === n) error = null
        break scan
      }
      if (i >= n) break scan
      const d = buf[i]!
      if (d === 0x2c) {
        i = skipSpace(buf, i + 1)
        if (kinds[depth] === OBJECT) {
          i = readMemberName(buf, i, depth === 1 && isObject, wanted)
          if (i < 0) break scan
          if (depth === 1) {
            member = keyIndex
            valueStart = i
          }
        }
        continue scan
      }
      if (d !== (kinds[depth] === OBJECT ? 0x7d : 0x5d)) break scan
      depth--
      i++
    }
  }
  // The word view is only for this scan: a long body must not stay alive in it.
  words = null
  wordsFor = null
  return { error, isObject, spans }
}

/** What membersFromEnd found: the spans of the members asked for, and those inside the one asked into. */
export interface MembersFound extends MemberSpans {
  /** The spans of `inner` inside the object value of the member `into` (all -1 when it is not an object). */
  readonly inner: MemberSpans
}

/**
 * The top-level members `wanted` of a JSON object text, read from its end: the same spans as
 * scanJson gives for a valid text (the last occurrence of a name is the first met from the end),
 * found without reading the text before them. An answer's `usage` comes at or near its end, so
 * its token counts cost the bytes of the tail, however long the answer (scanJson reads every byte,
 * about 40 instructions each). When the value of `wanted[into]` is an object, its members `inner`
 * are found in the same pass (the walk back over that object is what finds where it starts).
 * Nothing is validated on the way beyond the members' punctuation: for a text that is not valid
 * JSON the spans may be anything a forward scan would refuse, so a value read from them must still
 * be parsed or checked on its own. Null when the tail is not members of an object. Linear: each
 * byte is read at most twice (a quote's backslashes counted once more).
 */
export function membersFromEnd(
  buf: Uint8Array,
  wanted: readonly Uint8Array[],
  into = -1,
  inner: readonly Uint8Array[] = [],
): MembersFound | null {
  const spans = noSpans(wanted.length)
  const nested: Into = { member: into, names: inner, spans: noSpans(inner.length) }
  const close = spaceBefore(buf, buf.length - 1)
  if (close < 0 || buf[close] !== 0x7d) return null
  const open = membersBack(buf, close, wanted, spans, nested)
  if (open !== ALL_FOUND && (open < 0 || spaceBefore(buf, open - 1) >= 0)) return null
  return { spans, inner: { spans: nested.spans } }
}

/** Which member's object value membersBack reads the members of too, and what it found there. */
interface Into {
  readonly member: number
  readonly names: readonly Uint8Array[]
  spans: number[]
}

/** membersBack stopped once every wanted member was found (only at the top level, which has `into`). */
const ALL_FOUND = -2

/**
 * Walks the members of the object whose closing brace is at `close` back to its opening brace,
 * putting the spans of the `wanted` ones in `spans` (the first met from the end of each). Returns
 * the opening brace's index, -1 when the bytes are not members of an object, or ALL_FOUND when
 * `into` is given (the top level) and every wanted member was found before the start was reached.
 */
function membersBack(
  buf: Uint8Array,
  close: number,
  wanted: readonly Uint8Array[],
  spans: number[],
  into: Into | null,
): number {
  let left = wanted.length
  let i = spaceBefore(buf, close - 1)
  if (i >= 0 && buf[i] === 0x7b) return i
  for (;;) {
    if (i < 0) return -1
    const valueEnd = i + 1
    let innerSpans: number[] | null = null
    let valueStart: number
    if (into !== null && into.member >= 0 && buf[i] === 0x7d) {
      innerSpans = noSpans(into.names.length)
      valueStart = membersBack(buf, i, into.names, innerSpans, null)
    } else valueStart = valueStartBefore(buf, i)
    if (valueStart < 0) return -1
    i = spaceBefore(buf, valueStart - 1)
    if (i < 0 || buf[i] !== 0x3a) return -1
    i = spaceBefore(buf, i - 1)
    if (i < 0 || buf[i] !== QUOTE) return -1
    const keyStart = stringStartBefore(buf, i)
    if (keyStart < 0) return -1
    const w = keyIndexOf(buf, keyStart, i + 1, escaped, wanted)
    if (w >= 0 && spans[w * 2]! < 0) {
      spans[w * 2] = valueStart
      spans[w * 2 + 1] = valueEnd
      left--
      if (innerSpans !== null && w === into!.member) into!.spans = innerSpans
      if (left === 0 && into !== null) return ALL_FOUND
    }
    i = spaceBefore(buf, keyStart - 1)
    if (i < 0) return -1
    if (buf[i] === 0x7b) return i
    if (buf[i] !== 0x2c) return -1
    i = spaceBefore(buf, i - 1)
  }
}

/** The index of the last byte at or before i that is not JSON white space; -1 when none is. */
function spaceBefore(buf: Uint8Array, i: number): number {
  while (i >= 0) {
    const c = buf[i]!
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break
    i--
  }
  return i
}

/** The first byte of the value whose last byte is at `end`; -1 when there is none. */
function valueStartBefore(buf: Uint8Array, end: number): number {
  const c = buf[end]!
  if (c === QUOTE) return stringStartBefore(buf, end)
  if (c === 0x7d || c === 0x5d) {
    // A container: count brackets back to its opening one, stepping over strings whole.
    let depth = 0
    for (let i = end; i >= 0; i--) {
      const d = buf[i]!
      if (d === QUOTE) {
        i = stringStartBefore(buf, i)
        if (i < 0) return -1
      } else if (d === 0x7d || d === 0x5d) depth++
      else if ((d === 0x7b || d === 0x5b) && --depth === 0) return i
    }
    return -1
  }
  // A number or a literal: its bytes back to the first that cannot be one of them.
  let i = end
  while (i >= 0 && isScalarByte(buf[i]!)) i--
  return i === end ? -1 : i + 1
}

function isScalarByte(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7a) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x45
}

/**
 * The opening quote of the string whose closing quote is at `close`: the first quote before it not
 * escaped. Sets `escaped`, as scanString does.
 */
function stringStartBefore(buf: Uint8Array, close: number): number {
  escaped = false
  for (let i = close - 1; i >= 0; i--) {
    const c = buf[i]!
    if (c === BACKSLASH) escaped = true
    else if (c === QUOTE) {
      let k = i - 1
      while (k >= 0 && buf[k] === BACKSLASH) k--
      // An even run of backslashes escapes one another, not the quote.
      if ((i - 1 - k) % 2 === 0) return i
      escaped = true
      i = k + 1
    }
  }
  return -1
}

/** Which wanted name the key string `[open, close)` (quotes included) is, or -1; `hasEscape` as stringStartBefore found. */
function keyIndexOf(
  buf: Uint8Array,
  open: number,
  close: number,
  hasEscape: boolean,
  wanted: readonly Uint8Array[],
): number {
  if (!hasEscape) return wantedIndex(buf, open + 1, close - 1, false, wanted)
  try {
    return wantedIndex(buf, open + 1, close - 1, true, wanted)
  } catch {
    return -1 // not a valid string: no name at all
  }
}

/** Set by readMemberName: which wanted name the key it read is; -1 for none (or not at the top level). */
let keyIndex = -1

/** Reads `"name" :` at `at` and the space after it; returns where the value starts, or -1. */
function readMemberName(buf: Uint8Array, at: number, topLevel: boolean, wanted: readonly Uint8Array[]): number {
  keyIndex = -1
  const n = buf.length
  if (at >= n || buf[at] !== QUOTE) return -1
  const end = scanString(buf, at)
  if (end < 0) return -1
  if (topLevel) keyIndex = wantedIndex(buf, at + 1, end - 1, escaped, wanted)
  const colon = skipSpace(buf, end)
  if (colon >= n || buf[colon] !== 0x3a) return -1
  return skipSpace(buf, colon + 1)
}

/** The value of a scanned member as `JSON.parse` would give it; undefined when the member is absent. */
export function memberValue(buf: Uint8Array, scan: MemberSpans, index: number): unknown {
  const start = scan.spans[index * 2]!
  if (start < 0) return undefined
  return JSON.parse(bytesOf(buf, start, scan.spans[index * 2 + 1]!).toString())
}

/**
 * Spans for `count` members, none found yet: a plain array, which optimised code allocates inline,
 * where a typed array is a call into the runtime (and `fill` another).
 */
function noSpans(count: number): number[] {
  const spans: number[] = []
  for (let k = 0; k < count * 2; k++) spans.push(-1)
  return spans
}

/** Whether a backslash is among the bytes `[start, end)`: read in place, where `Buffer#includes` needs a view and a native call. */
function hasBackslash(buf: Uint8Array, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (buf[i] === BACKSLASH) return true
  return false
}

/** The bytes `[start, end)` of `buf` as a Buffer over the same memory (no copy). */
function bytesOf(buf: Uint8Array, start: number, end: number): Buffer {
  return Buffer.from(buf.buffer, buf.byteOffset + start, end - start)
}

/**
 * A scanned member's value when it is a string (without escapes: read straight from the bytes),
 * null when it is absent or anything else.
 */
export function memberString(buf: Buffer, scan: MemberSpans, index: number): string | null {
  const start = scan.spans[index * 2]!
  if (start < 0 || buf[start] !== QUOTE) return null
  const end = scan.spans[index * 2 + 1]!
  // Decoded in place: a view of the bytes first would be one more typed array per request.
  return hasBackslash(buf, start + 1, end - 1)
    ? (memberValue(buf, scan, index) as string)
    : buf.toString('utf8', start + 1, end - 1)
}

/**
 * A scanned member's value when it is a number, null when it is absent or anything else. A plain
 * integer is read from the bytes here; any other number (a fraction, an exponent, 16 digits or
 * more) is read by Number, which reads every JSON number as JSON.parse does.
 */
export function memberNumber(buf: Uint8Array, scan: MemberSpans, index: number): number | null {
  const start = scan.spans[index * 2]!
  if (start < 0) return null
  const end = scan.spans[index * 2 + 1]!
  const first = buf[start]!
  if (first !== 0x2d && !isDigit(first)) return null
  const negative = first === 0x2d
  let n = 0
  let i = negative ? start + 1 : start
  if (end - i < 16) {
    for (; i < end && isDigit(buf[i]); i++) n = n * 10 + buf[i]! - 0x30
    if (i === end) return negative ? -n : n
  }
  return Number(bytesOf(buf, start, end).toString('latin1'))
}

/** A scanned member's value as a Buffer of its own bytes (a view, not a copy); null when absent. */
export function memberBytes(buf: Uint8Array, scan: MemberSpans, index: number): Uint8Array | null {
  const start = scan.spans[index * 2]!
  return start < 0 ? null : buf.subarray(start, scan.spans[index * 2 + 1]!)
}

/** True when a scanned member is the literal `true`. */
export function memberIsTrue(buf: Uint8Array, scan: MemberSpans, index: number): boolean {
  const start = scan.spans[index * 2]!
  return start >= 0 && scan.spans[index * 2 + 1]! - start === 4 && buf[start] === 0x74
}

function grow(old: Uint8Array): Uint8Array {
  const next = new Uint8Array(old.length * 2)
  next.set(old)
  return next
}

function skipSpace(buf: Uint8Array, i: number): number {
  const n = buf.length
  while (i < n) {
    const c = buf[i]!
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break
    i++
  }
  return i
}

/** The string starting at the quote at i: the index after its closing quote, or -1. Sets `escaped`. */
function scanString(buf: Uint8Array, i: number): number {
  escaped = false
  const n = buf.length
  const shortEnd = Math.min(n, i + 1 + LONG_RUN)
  for (i++; i < shortEnd; i++) {
    const c = buf[i]!
    if (c === QUOTE) return i + 1
    if (c < 0x20) return -1
    if (c === BACKSLASH && (i = escapeEnd(buf, i)) < 0) return -1
  }
  return i < n ? scanLongString(buf, i) : -1
}

/**
 * The rest of a string from i, as scanString, read a word (four bytes) at a time where the word is
 * aligned and holds no byte that may end a plain run, and byte by byte elsewhere. Optimised code
 * reads a typed array at about 20 instructions a read (a map and a bounds check each time round),
 * so prose, with an escape every few hundred bytes, is read about twice as fast as byte by byte, and
 * code, with one every few dozen, no slower.
 */
function scanLongString(buf: Uint8Array, i: number): number {
  const n = buf.length
  const w32 = wordsOf(buf)
  const first = wordsStart
  const end = first + w32.length * 4
  while (i < n) {
    if (i >= first && i < end && ((i - first) & 3) === 0) {
      const w = w32[(i - first) >> 2]!
      const q = w ^ 0x22222222
      const b = w ^ 0x5c5c5c5c
      // Some byte is a quote, a backslash or under 0x20 exactly when this is not 0 (the bit tricks
      // for "has a zero byte" and "has a byte less than n", which never miss one).
      if (((((q - 0x01010101) & ~q) | ((b - 0x01010101) & ~b) | ((w - 0x20202020) & ~w)) & 0x80808080) === 0) {
        i += 4
        continue
      }
    }
    const c = buf[i]!
    if (c === QUOTE) return i + 1
    if (c < 0x20) return -1
    if (c === BACKSLASH && (i = escapeEnd(buf, i)) < 0) return -1
    i++
  }
  return -1
}

/** The last byte of the escape whose backslash is at i, or -1 when it is not one JSON allows. Sets `escaped`. */
function escapeEnd(buf: Uint8Array, i: number): number {
  escaped = true
  const e = buf[++i]
  if (e === 0x75) {
    for (let k = 0; k < 4; k++) if (!isHex(buf[++i])) return -1
    return i
  }
  return e === QUOTE ||
    e === BACKSLASH ||
    e === 0x2f ||
    e === 0x62 ||
    e === 0x66 ||
    e === 0x6e ||
    e === 0x72 ||
    e === 0x74
    ? i
    : -1
}

/** Strings longer than this are read on by scanLongString; shorter ones never pay for its word view. */
const LONG_RUN = 32
/** The scanned text's aligned words, made for its first long string and dropped when the scan ends. */
let words: Int32Array | null = null
let wordsFor: Uint8Array | null = null
/** The index in the scanned text of the first byte of words[0]. */
let wordsStart = 0

/** The aligned four-byte words inside `buf`, one view per scan; sets wordsStart. */
function wordsOf(buf: Uint8Array): Int32Array {
  if (wordsFor !== buf || words === null) {
    const start = (buf.byteOffset + 3) & ~3
    words = new Int32Array(buf.buffer, start, Math.max(0, (buf.byteOffset + buf.length - start) >> 2))
    wordsStart = start - buf.byteOffset
    wordsFor = buf
  }
  return words
}

function isHex(c: number | undefined): boolean {
  return c !== undefined && ((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66))
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39
}

/** `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?` at i: the index after it, or -1. */
function scanNumber(buf: Uint8Array, i: number): number {
  if (buf[i] === 0x2d) i++
  if (buf[i] === 0x30) i++
  else if (isDigit(buf[i])) i = digits(buf, i)
  else return -1
  if (buf[i] === 0x2e) {
    if (!isDigit(buf[++i])) return -1
    i = digits(buf, i)
  }
  if (buf[i] === 0x65 || buf[i] === 0x45) {
    i++
    if (buf[i] === 0x2b || buf[i] === 0x2d) i++
    if (!isDigit(buf[i])) return -1
    i = digits(buf, i)
  }
  return i
}

/** The index after the run of digits starting at i. */
function digits(buf: Uint8Array, i: number): number {
  while (isDigit(buf[i])) i++
  return i
}

const TRUE = Buffer.from('true')
const FALSE = Buffer.from('false')
const NULL = Buffer.from('null')

function literal(buf: Uint8Array, i: number, word: Uint8Array): number {
  for (let k = 0; k < word.length; k++) if (buf[i + k] !== word[k]) return -1
  return i + word.length
}

/** Which wanted name the key bytes `[start, end)` are, or -1; a key with escapes is decoded first. */
function wantedIndex(
  buf: Uint8Array,
  start: number,
  end: number,
  hasEscape: boolean,
  wanted: readonly Uint8Array[],
): number {
  if (hasEscape) {
    const name = JSON.parse(bytesOf(buf, start - 1, end + 1).toString()) as string
    return wanted.findIndex((w) => Buffer.from(w).toString() === name)
  }
  outer: for (let w = 0; w < wanted.length; w++) {
    const name = wanted[w]!
    if (name.length !== end - start) continue
    for (let k = 0; k < name.length; k++) if (buf[start + k] !== name[k]) continue outer
    return w
  }
  return -1
}
