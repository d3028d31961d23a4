import { formatDateTime } from '../../format/when'
import { formatMoney } from '../../../src-shared/money'

/** Formatting shared by the licensing panels. Amounts are integers in the smallest unit. */
export function money(currency: string | null | undefined, value: number | null | undefined): string {
  return value === null || value === undefined ? '—' : formatMoney(currency, value)
}

/** Parses what the operator typed for a price into the smallest unit (cents or sats). */
export function parseMoney(currency: string, text: string): number | null {
  const t = text.trim().replace(/[,_\s]/g, '')
  if (t === '') return null
  if (currency === 'USD' || currency === 'EUR') {
    if (!/^\d+(\.\d{1,2})?$/.test(t)) return null
    const [whole, frac = ''] = t.split('.')
    return Number(whole) * 100 + Number(frac.padEnd(2, '0'))
  }
  if (currency === 'BTC') {
    if (!/^\d+(\.\d{1,8})?$/.test(t)) return null
    const [whole, frac = ''] = t.split('.')
    return Number(whole) * 1e8 + Number(frac.padEnd(8, '0'))
  }
  return /^\d+$/.test(t) ? Number(t) : null
}

/** The smallest unit back to what an operator types. */
export function moneyInput(currency: string, value: number | null | undefined): string {
  if (value === null || value === undefined) return ''
  if (currency === 'USD' || currency === 'EUR') return (value / 100).toFixed(2)
  if (currency === 'BTC') return (value / 1e8).toFixed(8)
  return String(value)
}

export function when(ms: number | null | undefined): string {
  return formatDateTime(ms)
}

export function ago(ms: number | null | undefined, now = Date.now()): string {
  if (ms === null || ms === undefined) return 'never'
  const s = Math.round((now - ms) / 1000)
  if (s < 60) return `${s}s ago`
  if (s < 3600) return `${Math.round(s / 60)} min ago`
  if (s < 86400) return `${Math.round(s / 3600)} h ago`
  return `${Math.round(s / 86400)} d ago`
}

export function shortId(id: string | null | undefined): string {
  return id ? id.slice(0, 8) : '—'
}

export function statusClass(status: string): string {
  if (['active', 'settled', 'delivered', 'connected'].includes(status)) return 'badge ok'
  if (['pending', 'suspended', 'past_due'].includes(status)) return 'badge warn'
  if (['revoked', 'expired', 'invalid', 'failed'].includes(status)) return 'badge bad'
  return 'badge'
}

/** A random hex secret (for webhook signing) generated in the browser, to paste on both sides. */
export function randomSecret(bytes = 24): string {
  const b = new Uint8Array(bytes)
  crypto.getRandomValues(b)
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join('')
}
