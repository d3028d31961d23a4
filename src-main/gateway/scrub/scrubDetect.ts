import net from 'node:net'

/**
 * Detection for the redaction gateway (spec 1, 1.12): every personal value and secret in a text,
 * without overlaps. Linear in the text: each pattern is scanned once with bounded quantifiers and
 * start positions that cannot repeat inside one run, and overlaps are settled by merging the
 * detectors' ordered runs and one sweep. The work is a generator that pauses after each slice of text, so the daemon can serve
 * other requests while a large text is scrubbed.
 */
export type EntityType = 'EMAIL' | 'PHONE' | 'IP' | 'CARD' | 'IBAN' | 'SECRET' | 'TERM'

export interface Finding {
  readonly type: EntityType
  readonly start: number
  readonly end: number
  readonly value: string
}

/** Luhn checksum (payment cards). */
export function luhnValid(digits: string): boolean {
  if (!/^\d{12,19}$/.test(digits)) return false
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48
    if (i % 2 === 1) {
      d *= 2
      if (d > 9) d -= 9
    }
    sum += d
  }
  return sum % 10 === 0
}

/** Lengths of IBANs by country (ISO 13616 registry), for the countries most seen. */
const IBAN_LENGTH: Record<string, number> = {
  AD: 24,
  AE: 23,
  AT: 20,
  BA: 20,
  BE: 16,
  BG: 22,
  BH: 22,
  BR: 29,
  CH: 21,
  CY: 28,
  CZ: 24,
  DE: 22,
  DK: 18,
  EE: 20,
  ES: 24,
  FI: 18,
  FO: 18,
  FR: 27,
  GB: 22,
  GE: 22,
  GI: 23,
  GL: 18,
  GR: 27,
  HR: 21,
  HU: 28,
  IE: 22,
  IL: 23,
  IS: 26,
  IT: 27,
  KW: 30,
  KZ: 20,
  LB: 28,
  LI: 21,
  LT: 20,
  LU: 20,
  LV: 21,
  MC: 27,
  MD: 24,
  ME: 22,
  MK: 19,
  MT: 31,
  MU: 30,
  NL: 18,
  NO: 15,
  PK: 24,
  PL: 28,
  PS: 29,
  PT: 25,
  QA: 29,
  RO: 24,
  RS: 22,
  SA: 24,
  SE: 24,
  SI: 19,
  SK: 24,
  SM: 27,
  TN: 24,
  TR: 26,
  UA: 29,
  VG: 24,
  XK: 20,
}

/** ISO 7064 mod-97-10 check of an IBAN (spaces removed, upper case). */
export function ibanValid(iban: string): boolean {
  if (!/^[A-Z]{2}\d{2}[A-Z0-9]{10,30}$/.test(iban)) return false
  const len = IBAN_LENGTH[iban.slice(0, 2)]
  if (len !== undefined && iban.length !== len) return false
  const moved = iban.slice(4) + iban.slice(0, 4)
  let rem = 0
  for (const ch of moved) {
    const v = ch >= 'A' ? String(ch.charCodeAt(0) - 55) : ch
    for (const d of v) rem = (rem * 10 + (d.charCodeAt(0) - 48)) % 97
  }
  return rem === 1
}

/** Shannon entropy in bits per character. */
export function entropy(s: string): number {
  const counts = new Map<string, number>()
  for (const ch of s) counts.set(ch, (counts.get(ch) ?? 0) + 1)
  let h = 0
  for (const c of counts.values()) {
    const p = c / s.length
    h -= p * Math.log2(p)
  }
  return h
}

/** Text scanned between two pauses of the detection work. */
export const SLICE_CHARS = 64 * 1024
/** Findings handled between two pauses of the overlap sweep and of the rewriting. */
export const SLICE_ITEMS = 16 * 1024

/** Work that pauses (`yield`) between slices; drive it with `drain` or `finishSliced`. */
export type Work<T> = Generator<void, T, void>

/** Runs sliced work to the end at once (small texts, tests, the bench). */
export function drain<T>(work: Work<T>): T {
  for (;;) {
    const step = work.next()
    if (step.done) return step.value
  }
}

/** Runs sliced work, letting the event loop serve other requests between slices. */
export async function finishSliced<T>(work: Work<T>): Promise<T> {
  for (;;) {
    const step = work.next()
    if (step.done) return step.value
    await new Promise<void>((resolve) => setImmediate(resolve))
  }
}

/**
 * Secrets recognised by their issuer's prefix. A prefix whose own characters may appear in the
 * token's body is anchored with a look-behind so a match can only start where a run starts: a
 * run of 1 MB is then tried once, not once per position.
 */
const SECRET_PATTERNS: readonly RegExp[] = [
  /(?<![A-Za-z0-9_-])sk-(?:proj-|ant-(?:api\d{2}-)?|svcacct-)?[A-Za-z0-9_-]{20,200}/g,
  /\bgh[pousr]_[A-Za-z0-9]{36,255}\b/g,
  /\bgithub_pat_[A-Za-z0-9_]{22,255}\b/g,
  /(?<![A-Za-z0-9_-])glpat-[A-Za-z0-9_-]{20,255}\b/g,
  /(?<![A-Za-z0-9-])xox[abprs]-[A-Za-z0-9-]{10,200}\b/g,
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g,
  /\bAIza[0-9A-Za-z_-]{35}\b/g,
  /\bhf_[A-Za-z0-9]{30,255}\b/g,
  /\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,255}\b/g,
  /\bwhsec_[A-Za-z0-9+/=]{24,255}/g,
  /(?<![A-Za-z0-9_-])SG\.[A-Za-z0-9_-]{16,255}\.[A-Za-z0-9_-]{16,255}\b/g,
  /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}(?![A-Za-z0-9_-])/g,
]

/** PEM private keys: a BEGIN line, 16 to 8192 characters, the nearest END line (paired in one sweep). */
const KEY_BEGIN = /(?=(-----BEGIN (?:[A-Z0-9]{1,32} ){0,6}PRIVATE KEY-----))/g
const KEY_END = /(?=(-----END (?:[A-Z0-9]{1,32} ){0,6}PRIVATE KEY-----))/g
const KEY_BODY_MIN = 16
const KEY_BODY_MAX = 8192

/** E-mail: a local part of at most 64 characters before an `@`, then a domain (found from each `@`). */
const EMAIL_DOMAIN = /(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.){1,126}[A-Za-z]{2,24}\b/y
const EMAIL_LOCAL_MAX = 64
const EMAIL_LOCAL = new Uint8Array(128)
for (const ch of 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-')
  EMAIL_LOCAL[ch.charCodeAt(0)] = 1
/** `name@2x.png` is a file name: an "email" whose top-level domain is a common file extension. */
const FILE_EXTENSION = /\.(?:png|jpe?g|gif|svg|webp|bmp|ico|pdf|txt|js|mjs|ts|css|html?|json|ya?ml|wav|mp3|mp4)$/i

const IPV4 = /(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?![\d.]*\d)/g
const IPV6_CANDIDATE = /(?<![0-9A-Fa-f:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![0-9A-Fa-f:])/g
const CARD = /(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])/g
const IBAN = /\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){10,30}\b/g
const PHONE = new RegExp(
  [
    /(?<![\w+])\+\d{1,3}(?:[ .-](?:\(\d{1,4}\)|\d{1,4})){2,6}(?!\w)/.source, // international, grouped
    /(?<![\w+])\+\d{8,15}\b/.source, // international, compact
    /(?<![\w+])(?:\(\d{2,4}\)[ .-]?)?\d{2,4}(?:[ .-]\d{2,4}){1,3}(?!\w)/.source, // national, grouped
    /(?<![\w+])0\d{2,4}[ /-]\d{4,8}(?!\w)/.source, // national with a trunk prefix: 030 1234567
  ].join('|'),
  'g',
)
const TOKEN = /(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/_-]{24,512}={0,2}(?![A-Za-z0-9+/_=-])/g

function phoneLike(s: string): boolean {
  const digits = s.replace(/\D/g, '')
  // Seven-digit local numbers are left alone: too many counts and codes look like them.
  if (digits.length < 8 || digits.length > 15) return false
  // A range of years is not a phone number.
  if (/^(?:19|20)\d\d-(?:19|20)\d\d$/.test(s)) return false
  // Dates and times are not phone numbers.
  if (/^\d{4}-\d{2}-\d{2}$/.test(s) || /^\d{1,2}[./-]\d{1,2}[./-]\d{2,4}$/.test(s)) return false
  const groups = s.split(/[ .-]/)
  // A bare run of dot-separated groups is a version or decimal, not a phone, unless it starts with '+' or '('.
  if (!/^[+(]/.test(s) && /\./.test(s) && !/^\d{3}\.\d{3}\.\d{4}$/.test(s)) return false
  return groups.length >= 2 || s.startsWith('+')
}

function highEntropySecret(s: string): boolean {
  if (!/[a-z]/.test(s) || !/[A-Z]/.test(s) || !/\d/.test(s)) return false
  if (/^[A-Za-z]+(?:[-_][A-Za-z]+)+$/.test(s)) return false
  return entropy(s) >= 4.0
}

/** A match before overlaps are settled; `rank` orders the detectors, most specific first. */
interface Candidate {
  readonly type: EntityType
  readonly start: number
  readonly end: number
  readonly rank: number
}

type Add = (type: EntityType, start: number, end: number, rank: number) => void

/**
 * Every match of `pattern` in `text` (a private copy, so concurrent scrubs never share `lastIndex`),
 * pausing after each slice of text scanned and at the end of the pass.
 */
function* eachMatch(pattern: RegExp, text: string, onMatch: (m: RegExpExecArray) => void): Work<void> {
  const re = new RegExp(pattern.source, pattern.flags)
  let mark = 0
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    onMatch(m)
    if (m[0].length === 0) re.lastIndex++
    if (re.lastIndex - mark >= SLICE_CHARS) {
      mark = re.lastIndex
      yield
    }
  }
  yield
}

/** Positions and lengths of every (possibly overlapping) occurrence of a look-ahead pattern. */
function* occurrences(pattern: RegExp, text: string, out: { start: number; end: number }[]): Work<void> {
  yield* eachMatch(pattern, text, (m) => out.push({ start: m.index, end: m.index + (m[1] ?? '').length }))
}

/** PEM private keys, as `BEGIN[\s\S]{16,8192}?END` would find them, in one pass over each marker list. */
function* privateKeys(text: string, add: Add): Work<void> {
  if (!text.includes('PRIVATE KEY-----')) return
  const begins: { start: number; end: number }[] = []
  const ends: { start: number; end: number }[] = []
  yield* occurrences(KEY_BEGIN, text, begins)
  yield* occurrences(KEY_END, text, ends)
  let j = 0
  let resumeAt = 0
  for (const b of begins) {
    if (b.start < resumeAt) continue
    while (j < ends.length && ends[j]!.start < b.end + KEY_BODY_MIN) j++
    const e = ends[j]
    if (e && e.start <= b.end + KEY_BODY_MAX) {
      add('SECRET', b.start, e.end, 0)
      resumeAt = e.end
    }
  }
}

/**
 * E-mail addresses, found from each `@`: the local part is the longest run of allowed characters
 * (at most 64) before it, the domain a sticky match after it. Each character is looked at a
 * bounded number of times, however the text is built.
 */
function* emails(text: string, add: Add): Work<void> {
  const domain = new RegExp(EMAIL_DOMAIN.source, EMAIL_DOMAIN.flags)
  let resumeAt = 0
  let mark = 0
  for (let at = text.indexOf('@'); at !== -1; at = text.indexOf('@', at + 1)) {
    const floor = Math.max(resumeAt, at - EMAIL_LOCAL_MAX)
    let start = at
    while (start > floor && EMAIL_LOCAL[text.charCodeAt(start - 1)] === 1) start--
    if (start < at) {
      domain.lastIndex = at + 1
      const m = domain.exec(text)
      if (m) {
        const end = at + 1 + m[0].length
        if (!FILE_EXTENSION.test(m[0])) add('EMAIL', start, end, 1)
        resumeAt = end
      }
    }
    if (at - mark >= SLICE_CHARS) {
      mark = at
      yield
    }
  }
}

function termPattern(term: string): RegExp {
  const escaped = term.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  return new RegExp(`${/^\w/.test(term) ? '\\b' : ''}${escaped}${/\w$/.test(term) ? '\\b' : ''}`, 'giu')
}

/** Runs every detector once over the text, collecting candidates (overlaps included). */
function* candidates(text: string, terms: readonly string[], add: Add): Work<void> {
  for (const re of SECRET_PATTERNS) yield* eachMatch(re, text, (m) => add('SECRET', m.index, m.index + m[0].length, 0))
  yield* privateKeys(text, add)
  yield* emails(text, add)
  yield* eachMatch(IBAN, text, (m) => {
    if (ibanValid(m[0].replace(/ /g, ''))) add('IBAN', m.index, m.index + m[0].length, 2)
  })
  yield* eachMatch(CARD, text, (m) => {
    if (luhnValid(m[0].replace(/\D/g, ''))) add('CARD', m.index, m.index + m[0].length, 3)
  })
  yield* eachMatch(IPV4, text, (m) => add('IP', m.index, m.index + m[0].length, 4))
  yield* eachMatch(IPV6_CANDIDATE, text, (m) => {
    if (net.isIPv6(m[0]) && m[0].replace(/:/g, '') !== '') add('IP', m.index, m.index + m[0].length, 4)
  })
  yield* eachMatch(PHONE, text, (m) => {
    if (phoneLike(m[0])) add('PHONE', m.index, m.index + m[0].length, 5)
  })
  yield* eachMatch(TOKEN, text, (m) => {
    if (highEntropySecret(m[0])) add('SECRET', m.index, m.index + m[0].length, 6)
  })
  for (const term of terms) {
    const t = term.trim()
    if (t !== '') yield* eachMatch(termPattern(t), text, (m) => add('TERM', m.index, m.index + m[0].length, 7))
  }
}

/**
 * Candidates as runs already in settling order: each detector's matches come in text order, and
 * detectors run most specific first, so a run only breaks where the order would.
 */
class Runs {
  readonly runs: Candidate[][] = []
  private current: Candidate[] = []

  add(c: Candidate): void {
    const last = this.current[this.current.length - 1]
    if (last && (c.rank !== last.rank || c.start < last.start || (c.start === last.start && c.end > last.end))) {
      this.runs.push(this.current)
      this.current = []
    }
    this.current.push(c)
  }

  /** The runs, closed. */
  done(): Candidate[][] {
    if (this.current.length > 0) this.runs.push(this.current)
    this.current = []
    return this.runs
  }
}

/** Earlier first, then longer; a full tie keeps `a` first (stable). */
const before = (a: Candidate, b: Candidate): boolean => a.start < b.start || (a.start === b.start && a.end >= b.end)

function merge(a: readonly Candidate[], b: readonly Candidate[]): Candidate[] {
  const out: Candidate[] = []
  let i = 0
  let j = 0
  while (i < a.length && j < b.length) out.push(before(a[i]!, b[j]!) ? a[i++]! : b[j++]!)
  while (i < a.length) out.push(a[i++]!)
  while (j < b.length) out.push(b[j++]!)
  return out
}

/** All candidates in settling order (rank, then earlier, then longer), merged run by run. */
function* ordered(runs: readonly Candidate[][]): Work<Candidate[]> {
  const out: Candidate[] = []
  for (let i = 0; i < runs.length;) {
    let j = i
    while (j < runs.length && runs[j]![0]!.rank === runs[i]![0]!.rank) j++
    let level = runs.slice(i, j)
    while (level.length > 1) {
      const next: Candidate[][] = []
      for (let k = 0; k < level.length; k += 2)
        next.push(k + 1 < level.length ? merge(level[k]!, level[k + 1]!) : level[k]!)
      level = next
      yield
    }
    for (const c of level[0]!) out.push(c)
    i = j
  }
  return out
}

/**
 * Settles overlaps: specific detectors win over generic ones, then the earlier match, then the
 * longer. The candidates are swept in that order, marking the characters each kept finding owns;
 * each detector's own matches are disjoint, so the sweep reads each character a bounded number
 * of times. A walk over the marks then lists the kept findings in text order.
 */
function* settle(text: string, runs: readonly Candidate[][]): Work<Finding[]> {
  const order = yield* ordered(runs)
  const owner = new Int32Array(text.length)
  for (let i = 0; i < order.length; i++) {
    const f = order[i]!
    let free = true
    for (let k = f.start; k < f.end; k++)
      if (owner[k] !== 0) {
        free = false
        break
      }
    if (free) owner.fill(i + 1, f.start, f.end)
    if (i % SLICE_ITEMS === SLICE_ITEMS - 1) yield
  }
  const out: Finding[] = []
  let mark = 0
  for (let at = 0; at < text.length;) {
    if (owner[at] === 0) at++
    else {
      const f = order[owner[at]! - 1]!
      out.push({ type: f.type, start: f.start, end: f.end, value: text.slice(f.start, f.end) })
      at = f.end
    }
    if (at - mark >= SLICE_CHARS) {
      mark = at
      yield
    }
  }
  return out
}

/** Every finding in `text`, without overlaps, in text order; pauses between slices of work. */
export function* detectSliced(text: string, terms: readonly string[] = []): Work<Finding[]> {
  const runs = new Runs()
  yield* candidates(text, terms, (type, start, end, rank) => runs.add({ type, start, end, rank }))
  return yield* settle(text, runs.done())
}

/** Every finding in `text`, without overlaps, in text order. */
export function detect(text: string, terms: readonly string[] = []): Finding[] {
  return drain(detectSliced(text, terms))
}
