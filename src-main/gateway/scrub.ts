import net from 'node:net'
import { randomUUID } from 'node:crypto'
import type { Clock } from '../core/clock'

/**
 * The redaction gateway (spec 1, 1.12): finds personal data and secrets in text, swaps each for a
 * stable placeholder (`[EMAIL_1]`: the same value always gets the same one within a session) and
 * puts the originals back later, also inside text an LLM has rewritten around the placeholders.
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

/** Secrets recognised by their issuer's prefix. */
const SECRET_PATTERNS: RegExp[] = [
  /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]{16,8192}?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----/g,
  /\bsk-(?:proj-|ant-(?:api\d{2}-)?|svcacct-)?[A-Za-z0-9_-]{20,200}/g,
  /\bgh[pousr]_[A-Za-z0-9]{36,255}\b/g,
  /\bgithub_pat_[A-Za-z0-9_]{22,255}\b/g,
  /\bglpat-[A-Za-z0-9_-]{20,}\b/g,
  /\bxox[abprs]-[A-Za-z0-9-]{10,200}\b/g,
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g,
  /\bAIza[0-9A-Za-z_-]{35}\b/g,
  /\bhf_[A-Za-z0-9]{30,}\b/g,
  /\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b/g,
  /\bwhsec_[A-Za-z0-9+/=]{24,}/g,
  /\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}\b/g,
  /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b/g,
]

const EMAIL = /[A-Za-z0-9._%+-]{1,64}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}\b/g
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

function* matches(re: RegExp, text: string): Generator<RegExpExecArray> {
  re.lastIndex = 0
  let m: RegExpExecArray | null
  while ((m = re.exec(text)) !== null) {
    yield m
    if (m[0].length === 0) re.lastIndex++
  }
}

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

/** Every finding in `text`, without overlaps, in text order. */
export function detect(text: string, terms: readonly string[] = []): Finding[] {
  const found: (Finding & { rank: number })[] = []
  const add = (type: EntityType, start: number, value: string, rank: number): void => {
    found.push({ type, start, end: start + value.length, value, rank })
  }
  for (const re of SECRET_PATTERNS) for (const m of matches(re, text)) add('SECRET', m.index, m[0], 0)
  for (const m of matches(EMAIL, text)) if (!FILE_EXTENSION.test(m[0])) add('EMAIL', m.index, m[0], 1)
  for (const m of matches(IBAN, text)) {
    const compact = m[0].replace(/ /g, '')
    if (ibanValid(compact)) add('IBAN', m.index, m[0], 2)
  }
  for (const m of matches(CARD, text)) if (luhnValid(m[0].replace(/\D/g, ''))) add('CARD', m.index, m[0], 3)
  for (const m of matches(IPV4, text)) add('IP', m.index, m[0], 4)
  for (const m of matches(IPV6_CANDIDATE, text))
    if (net.isIPv6(m[0]) && m[0].replace(/:/g, '') !== '') add('IP', m.index, m[0], 4)
  for (const m of matches(PHONE, text)) if (phoneLike(m[0])) add('PHONE', m.index, m[0], 5)
  for (const m of matches(TOKEN, text)) if (highEntropySecret(m[0])) add('SECRET', m.index, m[0], 6)
  for (const term of terms) {
    const t = term.trim()
    if (t === '') continue
    const escaped = t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    const re = new RegExp(`${/^\w/.test(t) ? '\\b' : ''}${escaped}${/\w$/.test(t) ? '\\b' : ''}`, 'giu')
    for (const m of matches(re, text)) add('TERM', m.index, m[0], 7)
  }
  // Specific detectors win over generic ones where matches overlap; then earlier and longer.
  found.sort((a, b) => a.rank - b.rank || a.start - b.start || b.end - b.start - (a.end - a.start))
  const out: Finding[] = []
  for (const f of found) {
    if (out.some((o) => f.start < o.end && o.start < f.end)) continue
    out.push({ type: f.type, start: f.start, end: f.end, value: f.value })
  }
  return out.sort((a, b) => a.start - b.start)
}

/** The identity of a value for placeholder reuse: the same email in another case is the same email. */
function canonical(type: EntityType, value: string): string {
  switch (type) {
    case 'EMAIL':
    case 'TERM':
      return value.toLowerCase()
    case 'CARD':
    case 'PHONE':
      return value.replace(/\D/g, '')
    case 'IBAN':
      return value.replace(/ /g, '').toUpperCase()
    default:
      return value
  }
}

interface Session {
  readonly id: string
  /** `type:canonical` → placeholder. */
  readonly byValue: Map<string, string>
  /** placeholder → original value (first seen). */
  readonly byPlaceholder: Map<string, string>
  readonly counters: Map<EntityType, number>
  lastUsed: number
}

export interface ScrubResult {
  text: string
  session_id: string
  entities: { type: EntityType; placeholder: string; start: number; end: number }[]
}

export class SessionNotFound extends Error {}

/**
 * Scrub sessions, in memory only (originals never touch the disk). A session lives `ttlMs` after
 * its last use; past `cap` sessions the least recently used one is dropped.
 */
export class ScrubSessions {
  private readonly sessions = new Map<string, Session>()

  constructor(
    private readonly clock: Clock,
    private readonly terms: readonly string[] = [],
    private readonly ttlMs = 60 * 60 * 1000,
    private readonly cap = 10_000,
  ) {}

  scrub(text: string, sessionId?: string): ScrubResult {
    this.expire()
    const session = sessionId ? this.touch(sessionId) : this.create()
    const findings = detect(text, this.terms)
    let out = ''
    let at = 0
    const entities: ScrubResult['entities'] = []
    for (const f of findings) {
      const key = `${f.type}:${canonical(f.type, f.value)}`
      let placeholder = session.byValue.get(key)
      if (!placeholder) {
        const n = (session.counters.get(f.type) ?? 0) + 1
        session.counters.set(f.type, n)
        placeholder = `[${f.type}_${n}]`
        session.byValue.set(key, placeholder)
        session.byPlaceholder.set(placeholder, f.value)
      }
      out += text.slice(at, f.start) + placeholder
      at = f.end
      entities.push({ type: f.type, placeholder, start: f.start, end: f.end })
    }
    out += text.slice(at)
    return { text: out, session_id: session.id, entities }
  }

  /** Puts originals back wherever a placeholder appears, tolerating case and inner spaces an LLM may add. */
  rehydrate(text: string, sessionId: string): { text: string; replaced: number } {
    this.expire()
    const session = this.touch(sessionId)
    let replaced = 0
    const out = text.replace(/\[\s*([A-Za-z]+)_(\d{1,6})\s*\]/g, (whole, type: string, n: string) => {
      const original = session.byPlaceholder.get(`[${type.toUpperCase()}_${Number(n)}]`)
      if (original === undefined) return whole
      replaced++
      return original
    })
    return { text: out, replaced }
  }

  get size(): number {
    return this.sessions.size
  }

  private create(): Session {
    const s: Session = {
      id: randomUUID(),
      byValue: new Map(),
      byPlaceholder: new Map(),
      counters: new Map(),
      lastUsed: this.clock.now(),
    }
    this.sessions.set(s.id, s)
    while (this.sessions.size > this.cap) {
      const oldest = this.sessions.keys().next().value as string
      this.sessions.delete(oldest)
    }
    return s
  }

  private touch(id: string): Session {
    const s = this.sessions.get(id)
    if (!s) throw new SessionNotFound(`unknown or expired session_id ${JSON.stringify(id.slice(0, 64))}`)
    s.lastUsed = this.clock.now()
    // Re-insert so Map order stays least-recently-used first.
    this.sessions.delete(id)
    this.sessions.set(id, s)
    return s
  }

  private expire(): void {
    const now = this.clock.now()
    for (const [id, s] of this.sessions) {
      if (now - s.lastUsed <= this.ttlMs) break
      this.sessions.delete(id)
    }
  }
}
