/**
 * Logging with one redaction filter. Every log line, every streamed job line and every error
 * message a caller sees passes through `redact`, which removes registered secret values,
 * passwords inside URLs and anything shaped like a credential header. Structured fields are
 * redacted value by value before they are serialised, so JSON escaping cannot hide a secret and a
 * secret too short to match safely in free text is still caught as a whole value.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error'

const CREDENTIAL_PATTERNS: RegExp[] = [
  /\b(Bearer|token|Basic)(\s+)[A-Za-z0-9._~+/=-]{8,}/gi,
  /\b(authorization|x-api-key|api[_-]?key|password|secret)(["']?\s*[:=]\s*["']?)[^\s"',;&]{4,}/gi,
]

/** `scheme://user:password@host`: the password runs to the last `@` of the authority. */
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s:@/?#"'<>]*):([^\s/?#"'<>]*)@/gi

/** Field names whose string values are credentials whatever they hold. */
const CREDENTIAL_FIELD = /(password|passwd|secret|token|api[_-]?key|apikey|authorization|cookie|private[_-]?key)$/i

/** Free-text matching of shorter secrets would hit ordinary words. */
const MIN_TEXT_SECRET = 6

/** `scheme://user:pass@host` → `scheme://user:***@host`. */
export function redactUrlCredentials(text: string): string {
  return text.replace(URL_CREDENTIALS, (_m, scheme: string, user: string) => `${scheme}${user}:***@`)
}

export class Redactor {
  private secrets = new Set<string>()
  /** Each text-matchable secret with its JSON-escaped forms, longest first. */
  private patterns: string[] = []

  /** Registers a value that must never appear in output. */
  add(secret: string | null | undefined): void {
    if (!secret || this.secrets.has(secret)) return
    this.secrets.add(secret)
    const forms = new Set<string>()
    for (const s of this.secrets) {
      if (s.length < MIN_TEXT_SECRET) continue
      forms.add(s)
      const escaped = JSON.stringify(s).slice(1, -1)
      forms.add(escaped)
      forms.add(escaped.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`))
    }
    this.patterns = [...forms].sort((a, b) => b.length - a.length)
  }

  redact(text: string): string {
    let out = text
    for (const s of this.patterns) {
      if (out.includes(s)) out = out.split(s).join('***')
    }
    for (const re of CREDENTIAL_PATTERNS) {
      out = out.replace(re, (_m, name: string, sep: string) => `${name}${sep}***`)
    }
    return redactUrlCredentials(out)
  }

  /**
   * A copy of structured fields with every string redacted before serialisation: a registered
   * secret as a whole value (any length), a value under a credential-like name, and the free-text
   * rules on the rest. Errors become their redacted message.
   */
  redactFields(value: unknown, name = '', seen = new WeakSet<object>()): unknown {
    if (typeof value === 'string') {
      if (value !== '' && (this.secrets.has(value) || CREDENTIAL_FIELD.test(name))) return '***'
      return this.redact(value)
    }
    if (value instanceof Error) return this.redactFields(value.message, name, seen)
    if (typeof value !== 'object' || value === null) return value
    if (seen.has(value)) return '[circular]'
    seen.add(value)
    if (Array.isArray(value)) return value.map((v) => this.redactFields(v, name, seen))
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = this.redactFields(v, k, seen)
    return out
  }
}

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void
  info(msg: string, fields?: Record<string, unknown>): void
  warn(msg: string, fields?: Record<string, unknown>): void
  error(msg: string, fields?: Record<string, unknown>): void
  child(scope: string): Logger
  readonly redactor: Redactor
}

export interface LogSink {
  write(line: string): void
}

const levelRank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 }

export function createLogger(opts: {
  redactor?: Redactor
  sink?: LogSink
  level?: LogLevel
  scope?: string
  now?: () => number
}): Logger {
  const redactor = opts.redactor ?? new Redactor()
  const sink = opts.sink ?? { write: (line: string) => process.stderr.write(line + '\n') }
  const min = levelRank[opts.level ?? 'info']
  const now = opts.now ?? Date.now
  const emit = (scope: string | undefined, level: LogLevel, msg: string, fields?: Record<string, unknown>): void => {
    if (levelRank[level] < min) return
    const extra = fields && Object.keys(fields).length > 0 ? ' ' + safeJson(redactor.redactFields(fields)) : ''
    const line = `${new Date(now()).toISOString()} ${level.toUpperCase().padEnd(5)} ${scope ? `[${scope}] ` : ''}${msg}${extra}`
    sink.write(redactor.redact(line))
  }
  const make = (scope: string | undefined): Logger => ({
    redactor,
    debug: (m, f) => emit(scope, 'debug', m, f),
    info: (m, f) => emit(scope, 'info', m, f),
    warn: (m, f) => emit(scope, 'warn', m, f),
    error: (m, f) => emit(scope, 'error', m, f),
    child: (s) => make(scope ? `${scope}.${s}` : s),
  })
  return make(opts.scope)
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v, (_k, val: unknown) => (val instanceof Error ? val.message : val))
  } catch {
    return '[unserialisable]'
  }
}

/** A sink that keeps lines in memory; tests read it to prove secrets never reach a log. */
export class MemorySink implements LogSink {
  readonly lines: string[] = []
  write(line: string): void {
    this.lines.push(line)
  }
}
