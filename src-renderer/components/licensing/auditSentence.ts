import type { OutputOf } from '../../api'

/**
 * An audit entry as a sentence in the dashboard's words: "tier" where the records say "policy",
 * "discount code", "webhook". The raw action and fields stay available behind "details".
 */
type Entry = OutputOf<'licAdminAudit'>[number]
type Details = Record<string, unknown>

const NOUNS: Record<string, string> = {
  license: 'license',
  machine: 'machine',
  discount: 'discount code',
  discount_code: 'discount code',
  product: 'product',
  policy: 'tier',
  invoice: 'invoice',
  subscription: 'subscription',
  webhook_endpoint: 'webhook',
  provider: 'payment provider',
  issuer_key: 'issuer key',
}

const VERBS: Record<string, string> = {
  create: 'Created',
  created: 'Added',
  update: 'Changed',
  updated: 'Changed',
  delete: 'Deleted',
  deleted: 'Removed',
  issue: 'Issued',
  revoke: 'Revoked',
  suspend: 'Suspended',
  reinstate: 'Reinstated',
  recover: 'Recovered',
  activate: 'Activated',
  activated: 'Activated',
  deactivate: 'Deactivated',
  cancel: 'Canceled',
  connected: 'Connected',
  disconnected: 'Disconnected',
  forgotten: 'Forgot',
  redeem: 'Redeemed',
  import: 'Imported',
  settled: 'Settled',
  flagged: 'Flagged',
}

/** A field or record name in the UI's words: `max_machines` → "max machines", `policy_id` → "tier". */
export function uiWords(name: string): string {
  return name
    .replace(/_id$/, '')
    .replace(/policy/g, 'tier')
    .replace(/_/g, ' ')
}

const text = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null)
const list = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [])

/** What the sentence names: a code, slug or URL when the entry carries one, else the record's id. */
function subject(e: Entry, d: Details): string {
  return text(d.code) ?? text(d.url) ?? (e.action.endsWith('.create') ? text(d.slug) : null) ?? e.target_id ?? ''
}

/** The tail after the verb and subject: what changed, why, from where. */
function tail(e: Entry, d: Details): string {
  const changed = list(d.changed)
  if (changed.length) return ` (${changed.map(uiWords).join(', ')})`
  const parts: string[] = []
  if (text(d.product) && text(d.policy)) parts.push(` for ${text(d.product)} on the ${text(d.policy)} tier`)
  else if (text(d.product)) parts.push(` of ${text(d.product)}`)
  if (text(d.from) && e.action.startsWith('license.')) parts.push(` (was ${text(d.from)})`)
  if (text(d.license_id) && e.target_type !== 'license') parts.push(` on license ${text(d.license_id)}`)
  const why = text(d.reason) ?? text(d.flag)
  if (why) parts.push(`: ${why}`)
  return parts.join('')
}

/** Entries whose sentence does not follow "<Verb> <noun> <subject>". */
const SPECIAL: Record<string, (e: Entry, d: Details) => string> = {
  'license.tier_change': (e, d) =>
    `Moved license ${e.target_id ?? ''} to another tier${text(d.direction) ? ` (${text(d.direction)})` : ''}`,
  'license.tier_change_scheduled': (e, d) =>
    `Scheduled license ${e.target_id ?? ''} to move to the ${text(d.to) ?? 'new'} tier`,
  'discount.over_cap': (_e, d) =>
    `Discount code ${text(d.code) ?? ''} went over its limit of ${String(d.max_redemptions ?? '?')} uses`,
  'subscription.lapse': (e) => `Subscription ${e.target_id ?? ''} lapsed`,
  'issuer_key.import': () => 'Imported the issuer key',
}

export function auditSentence(e: Entry): string {
  const d = e.details
  const special = SPECIAL[e.action]
  if (special) return special(e, d)
  const dot = e.action.indexOf('.')
  const kind = dot > 0 ? e.action.slice(0, dot) : (e.target_type ?? '')
  const what = dot > 0 ? e.action.slice(dot + 1) : e.action
  const noun = NOUNS[kind] ?? uiWords(kind)
  const verb = VERBS[what]
  if (verb) return `${verb} ${noun} ${subject(e, d)}${tail(e, d)}`.replace(/\s+/g, ' ').trim()
  // Invoice states (expired, invalid, …) and anything newer than this list.
  const Noun = noun.charAt(0).toUpperCase() + noun.slice(1)
  if (kind === 'invoice') return `${Noun} ${e.target_id ?? ''} ${uiWords(what)}`.trim()
  return `${Noun} ${uiWords(what)}: ${e.target_id ?? ''}`.trim()
}
