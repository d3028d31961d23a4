import type { AccessEntitlements } from '../../../src-main/contract/licensing/schemas'
import { moneyInput, parseMoney } from './format'

/**
 * A tier's access block as the tier form holds it: text as typed. An empty limit is no limit (null),
 * empty models are every served model (null); `sells` off is no access block at all.
 */
export interface AccessForm {
  sells: boolean
  models: string
  tokens_per_period: string
  requests_per_minute: string
  concurrent_streams: string
  audio_minutes_per_period: string
  top_up_tokens: string
  top_up_price: string
}

/** The limits the form edits, each a whole number of at least 1 or none, in the order the form shows them. */
export const ACCESS_LIMITS = [
  { key: 'tokens_per_period', id: 'tf-tokens', label: 'Tokens per period' },
  { key: 'requests_per_minute', id: 'tf-rpm', label: 'Requests per minute' },
  { key: 'concurrent_streams', id: 'tf-streams', label: 'Concurrent streams' },
  { key: 'audio_minutes_per_period', id: 'tf-audio', label: 'Audio minutes per period' },
] as const

type Limit = (typeof ACCESS_LIMITS)[number]['key']

const text = (n: number | null | undefined): string => (n === null || n === undefined ? '' : String(n))

/** The form for a tier's access block as loaded (none: the box unchecked), its pack price in `currency`. */
export function accessForm(access: AccessEntitlements | null | undefined, currency: string): AccessForm {
  return {
    sells: !!access,
    models: access?.models?.join(', ') ?? '',
    tokens_per_period: text(access?.tokens_per_period),
    requests_per_minute: text(access?.requests_per_minute),
    concurrent_streams: text(access?.concurrent_streams),
    audio_minutes_per_period: text(access?.audio_minutes_per_period),
    top_up_tokens: text(access?.top_up?.tokens),
    top_up_price: access?.top_up ? moneyInput(currency, access.top_up.price_value) : '',
  }
}

/** Whether the form has a token quota typed: only then is there a pack to sell. */
export const hasTokenQuota = (f: AccessForm): boolean => f.tokens_per_period.trim() !== ''

/** A whole number of at least 1 as typed; null when empty; undefined when it is not one. */
function wholeOrNone(typed: string): number | null | undefined {
  const t = typed.trim()
  if (t === '') return null
  return /^[1-9]\d*$/.test(t) ? Number(t) : undefined
}

type Typed<T> = { value: T } | { error: string }

function typedLimits(f: AccessForm): Typed<Record<Limit, number | null>> {
  const out = {} as Record<Limit, number | null>
  for (const { key } of ACCESS_LIMITS) {
    const n = wholeOrNone(f[key])
    if (n === undefined) return { error: `access.${key}: a whole number of at least 1, or empty for no limit` }
    out[key] = n
  }
  return { value: out }
}

function typedTopUp(f: AccessForm, currency: string): Typed<AccessEntitlements['top_up']> {
  const tokens = f.top_up_tokens.trim()
  const price = f.top_up_price.trim()
  // The pack is hidden without a token quota, so what it held is not sent.
  if (!hasTokenQuota(f) || (tokens === '' && price === '')) return { value: null }
  const value = parseMoney(currency, price)
  if (!/^[1-9]\d*$/.test(tokens) || value === null) {
    return { error: `access.top_up: whole tokens (at least 1) and a price in ${currency}` }
  }
  return { value: { tokens: Number(tokens), price_value: value } }
}

/**
 * The access block to send for what is typed (null: the tier sells no access), or the error to show
 * for a number that is not whole and positive. The server checks the rest and names the field.
 */
export function typedAccess(f: AccessForm, currency: string): Typed<AccessEntitlements | null> {
  if (!f.sells) return { value: null }
  const limits = typedLimits(f)
  if ('error' in limits) return limits
  const topUp = typedTopUp(f, currency)
  if ('error' in topUp) return topUp
  const models = f.models
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
  return { value: { models: models.length ? models : null, ...limits.value, top_up: topUp.value } }
}
