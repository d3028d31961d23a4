import fs from 'node:fs'
import path from 'node:path'

/**
 * The hostile-input corpus (test/fixtures/security/hostile-strings.json) and the checks every
 * target shares: refused with a clear 400, or accepted and then carried only as data.
 */
interface CorpusFile {
  note: string
  marker_placeholder: string
  groups: Record<string, string[]>
}

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'security', 'hostile-strings.json')

/** Every string of the corpus, the marker placeholder replaced by `marker` (a path that must never appear). */
export function hostileStrings(marker: string): string[] {
  const file = JSON.parse(fs.readFileSync(FIXTURE, 'utf8')) as CorpusFile
  return Object.values(file.groups)
    .flat()
    .map((s) => s.split(file.marker_placeholder).join(marker))
}

/** One answer, its body parsed when it is JSON. */
export interface Answer {
  readonly status: number
  readonly body: unknown
  readonly text: string
}

export async function answerOf(res: Response): Promise<Answer> {
  const text = await res.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {
    // not JSON: kept as text
  }
  return { status: res.status, body, text }
}

/** The message of an error answer in any of the three error styles (control, licensing, OpenAI). */
export function errorMessage(body: unknown): string | null {
  if (typeof body !== 'object' || body === null) return null
  const b = body as { detail?: unknown; message?: unknown; error?: unknown }
  if (typeof b.detail === 'string') return b.detail
  if (typeof b.message === 'string') return b.message
  const e = b.error as { message?: unknown } | undefined
  return typeof e?.message === 'string' ? e.message : null
}

/**
 * What is wrong with one answer to one hostile string, or null: a 5xx, a 400 without a clear
 * message (none, or a stack trace), or a status that is neither a refusal nor an acceptance.
 */
export function badAnswer(a: Answer, accepted: readonly number[]): string | null {
  if (a.status >= 500) return `${a.status} ${a.text.slice(0, 200)}`
  if (a.status === 400) {
    const m = errorMessage(a.body)
    if (m === null || m.trim() === '') return `400 without a message: ${a.text.slice(0, 200)}`
    if (/\n\s+at\s/.test(m)) return `400 with a stack trace: ${m.slice(0, 200)}`
    return null
  }
  if ((a.status >= 200 && a.status < 300) || accepted.includes(a.status)) return null
  return `unexpected ${a.status}: ${a.text.slice(0, 200)}`
}

/** A printable label for a string in a failure list. */
export function shown(s: string): string {
  const j = JSON.stringify(s)
  return j.length > 60 ? `${j.slice(0, 57)}…` : j
}

/** Indices of the raw command that sit inside a single-quoted region (the quotes themselves excluded). */
function singleQuoted(command: string): boolean[] {
  const inside: boolean[] = new Array<boolean>(command.length).fill(false)
  let state: 'plain' | 'single' | 'double' = 'plain'
  for (let i = 0; i < command.length; i++) {
    const c = command[i]
    if (state === 'single') {
      if (c === "'") state = 'plain'
      else inside[i] = true
    } else if (c === '\\') i++
    else if (state === 'double') {
      if (c === '"') state = 'plain'
    } else if (c === "'") state = 'single'
    else if (c === '"') state = 'double'
  }
  return inside
}

/**
 * The text of a single-quoted shell word from `start` (inside its quotes): runs of `'…'` joined by
 * `\'`, as `shq` writes a value holding a quote. Where the word ends, the decoding stops.
 */
function decodeQuoted(text: string, start: number): string {
  let out = ''
  let i = start
  for (;;) {
    const close = text.indexOf("'", i)
    if (close < 0) return out + text.slice(i)
    out += text.slice(i, close)
    if (text.startsWith("\\''", close + 1)) {
      out += "'"
      i = close + 4
    } else return out
  }
}

/**
 * Whether `value` (starting with a unique `tag`) reached a remote command only as a single-quoted
 * word: every occurrence of the tag must sit inside single quotes, and the quoted word must read
 * back as the value itself, byte for byte (through up to two levels of nesting, for a command
 * quoted again for `bash -c`). Returns a problem, or null; `found` counts the quoted occurrences.
 */
export function quotedOnly(
  commands: readonly string[],
  tag: string,
  value: string,
): { problem: string | null; found: number } {
  let found = 0
  for (const command of commands) {
    const inside = singleQuoted(command)
    for (let at = command.indexOf(tag); at >= 0; at = command.indexOf(tag, at + 1)) {
      if (!inside[at]) return { problem: `unquoted in: ${command.slice(Math.max(0, at - 80), at + 120)}`, found }
      let text = decodeQuoted(command, at)
      for (let level = 0; level < 2 && !text.startsWith(value); level++) text = decodeQuoted(text, 0)
      if (!text.startsWith(value))
        return { problem: `not carried byte for byte: ${command.slice(Math.max(0, at - 80), at + 120)}`, found }
      found++
    }
  }
  return { problem: null, found }
}

/**
 * Whether an untagged accepted value with shell syntax in it ever stood outside single quotes in
 * a command (a value holding a quote can only appear verbatim outside them).
 */
export function unquotedIn(commands: readonly string[], value: string): string | null {
  if (!/[^A-Za-z0-9._:/@+=,-]/.test(value)) return null
  for (const command of commands) {
    const inside = singleQuoted(command)
    for (let at = command.indexOf(value); at >= 0; at = command.indexOf(value, at + 1))
      for (let k = at; k < at + value.length; k++)
        if (!inside[k]) return command.slice(Math.max(0, at - 80), at + value.length + 80)
  }
  return null
}
