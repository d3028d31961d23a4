/**
 * Logging with one redaction filter. Every log line and every streamed job line passes through
 * `redact`, which removes registered secret values and anything shaped like a credential header.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error'

const CREDENTIAL_PATTERNS: RegExp[] = [
  /\b(Bearer|token|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi,
  /\b(authorization|x-api-key|api[_-]?key|password|secret)(["']?\s*[:=]\s*["']?)[^\s"',;&]{4,}/gi,
]

export class Redactor {
  private secrets = new Set<string>()

  /** Registers a value that must never appear in output. Short values are ignored (too many false hits). */
  add(secret: string | null | undefined): void {
    if (secret && secret.length >= 6) this.secrets.add(secret)
  }

  redact(text: string): string {
    let out = text
    for (const s of [...this.secrets].sort((a, b) => b.length - a.length)) {
      if (out.includes(s)) out = out.split(s).join('***')
    }
    for (const re of CREDENTIAL_PATTERNS) {
      out = out.replace(re, (_m, name: string, sep?: string) =>
        sep === undefined ? `${name} ***` : `${name}${sep}***`,
      )
    }
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
    const extra = fields && Object.keys(fields).length > 0 ? ' ' + safeJson(fields) : ''
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
