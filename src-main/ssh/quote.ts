/**
 * The one quoting function for remote shell commands (DESIGN.md, SSH). A value wrapped by `shq`
 * reaches the remote program as exactly one argument, byte for byte, whatever it holds.
 */
export function shq(value: string | number): string {
  const s = String(value)
  // A NUL cannot be carried in a C string argument; refuse rather than silently truncate.
  if (s.includes('\0')) throw new Error('a NUL byte cannot be passed to a remote command')
  return `'${s.replace(/'/g, `'\\''`)}'`
}

/** Quotes each value and joins them with spaces: an argv for a remote command line. */
export function shqArgs(values: readonly (string | number)[]): string {
  return values.map(shq).join(' ')
}

const SEGMENT = /^[A-Za-z0-9._-]+$/

/** A path segment that may be spliced into a double-quoted `$HOME` path without quoting. */
export function isSafeSegment(segment: string): boolean {
  return SEGMENT.test(segment) && segment !== '.' && segment !== '..'
}

/**
 * `"$HOME/a/b"`: a path under the remote user's home, double-quoted so the remote shell expands
 * `$HOME` (single quotes would block it, spec 1, 2.4). Segments are checked against a whitelist
 * free of every character that is special inside double quotes.
 */
export function homePath(segments: readonly string[]): string {
  for (const s of segments) {
    if (!isSafeSegment(s)) throw new Error(`unsafe path segment ${JSON.stringify(s)}`)
  }
  return segments.length === 0 ? '"$HOME"' : `"$HOME/${segments.join('/')}"`
}

/**
 * A configured remote directory, either `$HOME/<segments>` or an absolute path, as a shell word:
 * the former double-quoted for expansion, the latter single-quoted.
 */
export function remoteDir(spec: string): string {
  if (spec === '$HOME' || spec === '~') return homePath([])
  const home = /^(?:\$HOME|~)\/(.+)$/.exec(spec)
  if (home) return homePath((home[1] as string).split('/').filter((s) => s !== ''))
  if (!spec.startsWith('/'))
    throw new Error(`remote directory must be absolute or under $HOME: ${JSON.stringify(spec)}`)
  const segments = spec.split('/').filter((s) => s !== '')
  for (const s of segments) {
    if (!isSafeSegment(s)) throw new Error(`unsafe path segment ${JSON.stringify(s)}`)
  }
  return shq(spec)
}
