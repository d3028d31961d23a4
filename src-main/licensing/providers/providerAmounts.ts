import type { ProviderMoney } from './types'

/** Digits after the point in each currency's smallest unit, as the providers spell them. */
const DECIMALS: Record<string, number> = { BTC: 8, SATS: 0, SAT: 0, USD: 2, EUR: 2 }

/**
 * A provider's decimal amount string (`"0.00012345"`, `"19.99"`, `12`) in the smallest unit of
 * its currency, without floating point; BTC and SATS both come out in sats, under `BTC`. Null
 * when the text is not a plain non-negative decimal with at most that many places.
 */
export function parseProviderMoney(amount: string | number, currency: string): ProviderMoney | null {
  const code = currency.toUpperCase()
  const places = DECIMALS[code] ?? 2
  const text = typeof amount === 'number' ? String(amount) : amount.trim()
  const m = /^(\d{1,15})(?:\.(\d+))?$/.exec(text)
  if (!m) return null
  const frac = (m[2] ?? '').replace(/0+$/, '')
  if (frac.length > places) return null
  const value = Number(BigInt(m[1]!) * 10n ** BigInt(places) + BigInt(frac.padEnd(places, '0') || '0'))
  if (!Number.isSafeInteger(value)) return null
  return { currency: code === 'SATS' || code === 'SAT' ? 'BTC' : code, value }
}

/** `12345 BTC` reads as `0.00012345 BTC`, `1999 USD` as `19.99 USD`: for the admin's flag text. */
export function formatProviderMoney(m: ProviderMoney): string {
  const places = DECIMALS[m.currency] ?? 2
  if (places === 0) return `${m.value} ${m.currency}`
  const s = String(m.value).padStart(places + 1, '0')
  return `${s.slice(0, -places)}.${s.slice(-places)} ${m.currency}`
}
