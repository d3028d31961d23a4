import type { QuotaKind } from '../platform/accessKeys'

/**
 * Which surface a request path belongs to (DESIGN.md, "Surfaces and who may call them"). This is
 * the one place that decides credentials, the origin guard and CORS for every route, contract or
 * not. Anything not listed is the control API: admin only.
 */
export type Surface =
  | 'dashboard' // static app and /login: open (the app itself asks for a session)
  | 'login' // POST /api/login, /api/logout, GET /api/session, /api/health: open, login rate-limited
  | 'control' // /api/*: admin session cookie or Bearer admin token; origin-guarded
  | 'consumer' // LAN clients of the gateway: open, or a CONSUMER_API_KEYS bearer key
  | 'licensing-public' // buyer API and pages: open, rate-limited per address
  | 'webhook' // payment provider webhooks: verified by their own handlers
  | 'licensing-admin' // /v1/admin/*: as the control API
  | 'metrics' // GET /metrics: a METRICS_TOKEN bearer or the admin credential, never open

const CONSUMER_EXACT = new Set([
  '/v1/models',
  '/v1/chat/completions',
  '/v1/completions',
  '/v1/embeddings',
  '/v1/usage',
  '/scrub',
  '/rehydrate',
  '/api/search',
  '/api/health-event',
  '/api/endpoints',
])
const CONSUMER_PREFIX = ['/v1/audio/', '/api/audio/']

/** Consumer routes that spend no tokens: a license's key reaches them even with its quota spent. */
const QUOTA_FREE = new Set(['/v1/models', '/v1/usage', '/api/endpoints'])

/**
 * The allowance of a license's key a path spends: audio seconds for the speech and transcription
 * routes (the audio prefixes), none for the routes above, tokens for the rest.
 */
export function quotaSpentBy(path: string): QuotaKind | null {
  if (QUOTA_FREE.has(path)) return null
  return CONSUMER_PREFIX.some((p) => path.startsWith(p)) ? 'audio' : 'tokens'
}

const LICENSING_PUBLIC_EXACT = new Set([
  '/healthz',
  '/v1/pubkey',
  '/v1/issuer/public-key',
  '/v1/products',
  '/v1/purchase',
  '/v1/redeem',
  '/v1/validate',
  '/v1/recover',
  '/v1/gateway-key',
  '/v1/discount-codes/preview',
  '/v1/upgrade-quote',
  '/v1/upgrade',
  '/v1/top-ups',
  '/v1/subscriptions/cancel',
  '/v1/openapi.json',
  '/thank-you',
  '/recover',
  '/favicon.ico',
])
const LICENSING_PUBLIC_PREFIX = ['/v1/products/', '/v1/purchase/', '/v1/machines/', '/buy/']

const WEBHOOKS = new Set([
  '/v1/btcpay/webhook',
  '/v1/zaprite/webhook',
  '/v1/provider_a/webhook',
  '/v1/provider_b/webhook',
  '/v1/btcpay/authorize/callback', // BTCPay's key hand-back: its single-use state authorizes it
])

/** Keysat's per-provider landings, `/v1/{btcpay,zaprite}/webhook/:provider_id`. */
const WEBHOOK_PREFIX = ['/v1/btcpay/webhook/', '/v1/zaprite/webhook/']

const OPEN_API = new Set(['/api/login', '/api/logout', '/api/session', '/api/health'])

export function surfaceOf(path: string): Surface {
  if (
    path === '/' ||
    path === '/login' ||
    path === '/index.html' ||
    path.startsWith('/assets/') ||
    path === '/favicon.svg'
  )
    return 'dashboard'
  if (OPEN_API.has(path)) return 'login'
  if (path === '/metrics') return 'metrics'
  if (CONSUMER_EXACT.has(path) || CONSUMER_PREFIX.some((p) => path.startsWith(p))) return 'consumer'
  if (WEBHOOKS.has(path) || WEBHOOK_PREFIX.some((p) => path.startsWith(p))) return 'webhook'
  if (path.startsWith('/v1/admin/')) return 'licensing-admin'
  if (LICENSING_PUBLIC_EXACT.has(path) || LICENSING_PUBLIC_PREFIX.some((p) => path.startsWith(p)))
    return 'licensing-public'
  return 'control'
}

/**
 * Consumer routes the dashboard's browser playground calls with its session cookie (recordings
 * too large for its own control route), when PLAYGROUND_SESSION_UPLOADS allows it.
 */
const PLAYGROUND_UPLOADS = new Set(['/api/audio/transcribe-with-speakers'])

export function isPlaygroundUpload(path: string): boolean {
  return PLAYGROUND_UPLOADS.has(path)
}

/** Surfaces a session cookie can reach: only these are origin-guarded (spec 1, 5.2). */
export function isOriginGuarded(surface: Surface): boolean {
  return surface === 'control' || surface === 'licensing-admin'
}

/** Surfaces that answer CORS from any origin, without credentials. */
export function allowsAnyOrigin(surface: Surface): boolean {
  return surface === 'consumer' || surface === 'licensing-public'
}
