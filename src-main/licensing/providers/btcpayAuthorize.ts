import { createHash, randomBytes } from 'node:crypto'
import { z } from 'zod'
import { ApiError } from '../../contract/errors'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import { immediate, type LicensingDb } from '../db'
import { BTCPAY_PERMISSIONS } from './btcpay'
import type { ProviderConnections, ProviderFactory } from './connections'
import { BtcpaySettings } from './types'

/** How long an authorization request may wait for the operator's consent at BTCPay. */
export const AUTHORIZE_TTL_MS = 15 * 60 * 1000

const State = z.string().regex(/^[A-Za-z0-9_-]{43}$/)
const StoreId = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/)
/** What BTCPay posts back on consent (form fields; `permissions` repeats). */
const Consent = z.object({
  apiKey: z.string().regex(/^[\x21-\x7e]{8,256}$/),
  permissions: z.array(z.string().max(200)).max(32),
})

export interface AuthorizeStart {
  authorize_url: string
  expires_at: number
  permissions: string[]
}

const hashState = (state: string): string => createHash('sha256').update(state).digest('hex')

/**
 * "Connect to BTCPay" by authorization: the operator is sent to the server's API-key
 * authorization page asking for exactly BTCPAY_PERMISSIONS; BTCPay posts the new key back to the
 * callback, whose single-use, expiring `state` ties it to this request (only its hash is
 * stored). Tandem then checks the key, registers its own webhook with a fresh secret and
 * connects, so nothing has to be pasted.
 */
export class BtcpayAuthorizations {
  constructor(
    private readonly deps: {
      db: LicensingDb
      clock: Clock
      logger: Logger
      providers: ProviderConnections
      factory: ProviderFactory
      publicUrl: () => string
    },
  ) {}

  start(input: { baseUrl: string; storeId?: string }): AuthorizeStart {
    const { db, clock } = this.deps
    const baseUrl = BtcpaySettings.shape.baseUrl.parse(input.baseUrl.replace(/\/+$/, ''))
    const storeId = input.storeId === undefined ? null : StoreId.parse(input.storeId)
    const state = randomBytes(32).toString('base64url')
    const now = clock.now()
    const expiresAt = now + AUTHORIZE_TTL_MS
    immediate(db, () => {
      db.prepare('DELETE FROM btcpay_authorizations WHERE expires_at <= ?').run(now)
      db.prepare(
        'INSERT INTO btcpay_authorizations (state_hash, base_url, store_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)',
      ).run(hashState(state), baseUrl, storeId, now, expiresAt)
    })
    // Naming the store asks for permissions on it alone; otherwise the operator picks one.
    const permissions = BTCPAY_PERMISSIONS.map((p) => (storeId ? `${p}:${storeId}` : p))
    const q = new URLSearchParams({ applicationName: 'Tandem licensing', strict: 'true' })
    if (!storeId) q.set('selectiveStores', 'true')
    for (const p of permissions) q.append('permissions', p)
    q.set('redirect', `${this.deps.publicUrl()}/v1/btcpay/authorize/callback?state=${state}`)
    return { authorize_url: `${baseUrl}/api-keys/authorize?${q.toString()}`, expires_at: expiresAt, permissions }
  }

  /** The callback: spends the state, checks what was granted, registers the webhook and connects. */
  async complete(stateRaw: unknown, fields: URLSearchParams, signal?: AbortSignal): Promise<void> {
    const { db, clock, providers, factory, logger } = this.deps
    const state = State.safeParse(stateRaw)
    if (!state.success) throw new ApiError('bad_input', 'the authorization state is missing or malformed')
    const row = immediate(db, () => {
      const r = db
        .prepare('DELETE FROM btcpay_authorizations WHERE state_hash = ? RETURNING base_url, store_id, expires_at')
        .get(hashState(state.data)) as { base_url: string; store_id: string | null; expires_at: number } | undefined
      return r
    })
    if (!row) throw new ApiError('bad_input', 'this authorization was already used or never started')
    if (clock.now() >= row.expires_at) throw new ApiError('bad_input', 'this authorization expired; start again')
    const consent = Consent.safeParse({ apiKey: fields.get('apiKey'), permissions: fields.getAll('permissions') })
    if (!consent.success) throw new ApiError('bad_input', 'BTCPay sent no usable API key')
    logger.redactor.add(consent.data.apiKey)
    const storeId = row.store_id ?? grantedStore(consent.data.permissions)
    const missing = BTCPAY_PERMISSIONS.filter(
      (p) => !consent.data.permissions.some((g) => g === p || g === `${p}:${storeId}`),
    )
    if (missing.length > 0) throw new ApiError('bad_input', `BTCPay did not grant: ${missing.join(', ')}`)
    const webhookSecret = randomBytes(24).toString('base64url')
    logger.redactor.add(webhookSecret)
    const settings = BtcpaySettings.parse({
      baseUrl: row.base_url,
      storeId,
      apiKey: consent.data.apiKey,
      webhookSecret,
    })
    const btcpay = factory.btcpay(settings)
    try {
      await btcpay.verifyCredentials(signal)
    } catch (err) {
      const msg = err instanceof ApiError ? err.message : 'the provider could not be reached'
      throw new ApiError('bad_input', `BTCPay did not accept the granted key: ${msg}`)
    }
    const webhookId = await btcpay.registerWebhook(`${this.deps.publicUrl()}/v1/btcpay/webhook`, webhookSecret, signal)
    await providers.connectBtcpay(settings, signal, { webhookId, skipCheck: true })
    logger.info('BTCPay connected by authorization', { store_id: storeId, webhook_id: webhookId })
  }
}

/** The one store the granted permissions name (`perm:STORE`); the operator picked it at BTCPay. */
function grantedStore(permissions: readonly string[]): string {
  const stores = new Set(permissions.map((p) => p.split(':')[1]).filter((s): s is string => Boolean(s)))
  const [only] = stores
  if (stores.size !== 1 || !only || !StoreId.safeParse(only).success) {
    throw new ApiError('bad_input', 'grant Tandem exactly one store at BTCPay')
  }
  return only
}
