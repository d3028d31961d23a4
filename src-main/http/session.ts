import { parse as parseCookieHeader } from 'cookie'

export const SESSION_COOKIE = 'tandem_session'

/** One cookie's value from a Cookie header; a malformed header is no cookie, never an error. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined
  try {
    return parseCookieHeader(header)[name]
  } catch {
    return undefined
  }
}
