/**
 * Where a purchase may send the buyer after paying. The provider redirects automatically, so an
 * arbitrary `redirect_url` would let a phishing page receive a buyer straight from the merchant's
 * real checkout: it must be on the product's return URL prefix, Tandem's own public URL, or an
 * origin in REDIRECT_ALLOWLIST. Anything else is refused with the reason (400).
 */
import { ApiError } from '../contract/errors'

export interface RedirectRules {
  /** The product's configured return URL prefix, if any. */
  productPrefix: string | null
  /** Tandem's own public base URL. */
  publicUrl: string
  /** Allowed origins (scheme://host[:port]). */
  allowlist: readonly string[]
}

function parse(u: string): URL | null {
  try {
    return new URL(u)
  } catch {
    return null
  }
}

/** `url` is under `prefix`: same origin, and the path is the prefix's path or below it (not a longer name). */
export function underPrefix(url: URL, prefix: string): boolean {
  const p = parse(prefix)
  if (!p || p.origin !== url.origin) return false
  const base = p.pathname
  if (base === '/' || url.pathname === base) return true
  return url.pathname.startsWith(base.endsWith('/') ? base : `${base}/`)
}

/** Null when allowed, else the reason it is not. */
export function redirectRefusal(redirectUrl: string, rules: RedirectRules): string | null {
  const url = parse(redirectUrl)
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) return 'redirect_url must be an http(s) URL'
  if (url.username !== '' || url.password !== '') return 'redirect_url must not carry a user name or password'
  if (rules.productPrefix && underPrefix(url, rules.productPrefix)) return null
  if (underPrefix(url, rules.publicUrl)) return null
  if (rules.allowlist.some((origin) => parse(origin)?.origin === url.origin)) return null
  const allowed = [rules.productPrefix, rules.publicUrl, ...rules.allowlist].filter((x): x is string => !!x)
  return `redirect_url ${url.origin} is not an allowed return address (allowed: ${allowed.join(', ')}); set the product's return URL prefix or REDIRECT_ALLOWLIST`
}

export function assertRedirectAllowed(redirectUrl: string, rules: RedirectRules): void {
  const reason = redirectRefusal(redirectUrl, rules)
  if (reason) throw new ApiError('redirect_not_allowed', reason, { status: 400, param: 'redirect_url' })
}
