import type { ServerResponse } from 'node:http'
import { parseCookie, stringifySetCookie } from 'cookie'

export const SESSION_COOKIE = 'tandem_session'

/** One cookie's value from a Cookie header; a malformed header is no cookie, never an error. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined
  try {
    return parseCookie(header)[name]
  } catch {
    return undefined
  }
}

/** Sets the session cookie: HttpOnly, SameSite=Strict, the whole site, Secure when the client came over HTTPS. */
export function setSessionCookie(
  res: ServerResponse,
  value: string,
  maxAgeS: number,
  now: number,
  secure: boolean,
): void {
  res.appendHeader(
    'Set-Cookie',
    stringifySetCookie({
      name: SESSION_COOKIE,
      value,
      httpOnly: true,
      sameSite: 'strict',
      path: '/',
      maxAge: maxAgeS,
      expires: new Date(now + maxAgeS * 1000),
      secure,
    }),
  )
}

/** Tells the browser to drop the session cookie (same attributes, expired). */
export function clearSessionCookie(res: ServerResponse, secure: boolean): void {
  res.appendHeader(
    'Set-Cookie',
    stringifySetCookie({
      name: SESSION_COOKIE,
      value: '',
      httpOnly: true,
      sameSite: 'strict',
      path: '/',
      expires: new Date(1),
      secure,
    }),
  )
}
