import type { ProvidersStatus } from '../../contract/licensing'
import { ApiError } from '../../contract/errors'
import type { Clock } from '../../core/clock'
import { redactUrlCredentials, type Logger } from '../../core/logger'
import type { AuditLog } from '../audit'
import { immediate, type LicensingDb } from '../db'
import { BtcpayProvider } from './btcpay'
import { ZapriteProvider } from './zaprite'
import { BtcpaySettings, ProviderKind, ZAPRITE_DEFAULT_BASE_URL, ZapriteSettings, type PaymentProvider } from './types'

const ACTIVE_KEY = 'active_provider'

interface BtcpayRow {
  base_url: string
  api_key: string
  store_id: string
  webhook_secret: string | null
  connected_at: number
}
interface ZapriteRow {
  base_url: string
  api_key: string
  connected_at: number
}

export interface ProviderFactory {
  btcpay(s: BtcpaySettings): PaymentProvider
  zaprite(s: ZapriteSettings): PaymentProvider
}

const defaultFactory: ProviderFactory = {
  btcpay: (s) => new BtcpayProvider(s),
  zaprite: (s) => new ZapriteProvider(s),
}

/**
 * The stored provider connections (`provider_a_config` = BTCPay, `provider_b_config` = Zaprite)
 * and which one is active. Connecting validates the credentials at the provider first; only then
 * are they saved and the active provider swapped, in one transaction. A connected but inactive
 * provider still verifies webhooks and answers reconciliation for the invoices created through it,
 * so switching never strands a buyer who already paid.
 */
export class ProviderConnections {
  constructor(
    private readonly db: LicensingDb,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly audit: AuditLog,
    /** Public base URL, for the webhook addresses the operator configures at each provider. */
    private readonly publicUrl: () => string,
    private readonly factory: ProviderFactory = defaultFactory,
  ) {
    for (const s of [this.btcpayRow()?.api_key, this.btcpayRow()?.webhook_secret, this.zapriteRow()?.api_key]) {
      logger.redactor.add(s)
    }
  }

  private btcpayRow(): BtcpayRow | undefined {
    return this.db
      .prepare('SELECT base_url, api_key, store_id, webhook_secret, connected_at FROM provider_a_config WHERE id = 1')
      .get() as BtcpayRow | undefined
  }

  private zapriteRow(): ZapriteRow | undefined {
    return this.db.prepare('SELECT base_url, api_key, connected_at FROM provider_b_config WHERE id = 1').get() as
      ZapriteRow | undefined
  }

  activeKind(): ProviderKind | null {
    const row = this.db.prepare('SELECT value FROM settings WHERE key = ?').get(ACTIVE_KEY) as
      { value: string } | undefined
    const kind = ProviderKind.safeParse(row?.value)
    if (!kind.success) return null
    return this.forKind(kind.data) ? kind.data : null
  }

  /** The provider new checkouts go to, or null when none is connected. */
  active(): PaymentProvider | null {
    const kind = this.activeKind()
    return kind ? this.forKind(kind) : null
  }

  /** A provider by kind, active or not, when its credentials are stored. */
  forKind(kind: ProviderKind): PaymentProvider | null {
    if (kind === 'btcpay') {
      const r = this.btcpayRow()
      if (!r || !r.webhook_secret) return null
      return this.factory.btcpay({
        baseUrl: r.base_url,
        storeId: r.store_id,
        apiKey: r.api_key,
        webhookSecret: r.webhook_secret,
      })
    }
    const r = this.zapriteRow()
    return r ? this.factory.zaprite({ baseUrl: r.base_url, apiKey: r.api_key }) : null
  }

  status(): ProvidersStatus {
    const active = this.activeKind()
    const b = this.btcpayRow()
    const z = this.zapriteRow()
    return {
      active,
      btcpay: {
        connected: b !== undefined,
        active: active === 'btcpay',
        base_url: b ? redactUrlCredentials(b.base_url) : null,
        connected_at: b?.connected_at ?? null,
        webhook_url: `${this.publicUrl()}/v1/btcpay/webhook`,
        store_id: b?.store_id ?? null,
        has_webhook_secret: Boolean(b?.webhook_secret),
      },
      zaprite: {
        connected: z !== undefined,
        active: active === 'zaprite',
        base_url: z ? redactUrlCredentials(z.base_url) : null,
        connected_at: z?.connected_at ?? null,
        webhook_url: `${this.publicUrl()}/v1/zaprite/webhook`,
      },
    }
  }

  async connectBtcpay(input: BtcpaySettings, signal?: AbortSignal): Promise<ProvidersStatus> {
    const s = BtcpaySettings.parse({ ...input, baseUrl: input.baseUrl.replace(/\/+$/, '') })
    this.logger.redactor.add(s.apiKey)
    this.logger.redactor.add(s.webhookSecret)
    await this.validate(this.factory.btcpay(s), signal)
    const now = this.clock.now()
    immediate(this.db, () => {
      this.db
        .prepare(
          `INSERT INTO provider_a_config (id, base_url, api_key, store_id, webhook_secret, connected_at, updated_at)
           VALUES (1, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (id) DO UPDATE SET base_url = excluded.base_url, api_key = excluded.api_key,
             store_id = excluded.store_id, webhook_secret = excluded.webhook_secret, updated_at = excluded.updated_at`,
        )
        .run(s.baseUrl, s.apiKey, s.storeId, s.webhookSecret, now, now)
      this.setActive('btcpay', now)
      this.audit.record({
        actor: 'admin',
        action: 'provider.connected',
        targetType: 'provider',
        targetId: 'btcpay',
        details: { base_url: s.baseUrl, store_id: s.storeId },
      })
    })
    this.logger.info('BTCPay connected and active', { base_url: s.baseUrl, store_id: s.storeId })
    return this.status()
  }

  async connectZaprite(input: { apiKey: string; baseUrl?: string }, signal?: AbortSignal): Promise<ProvidersStatus> {
    const s = ZapriteSettings.parse({
      apiKey: input.apiKey,
      baseUrl: (input.baseUrl ?? ZAPRITE_DEFAULT_BASE_URL).replace(/\/+$/, ''),
    })
    this.logger.redactor.add(s.apiKey)
    await this.validate(this.factory.zaprite(s), signal)
    const now = this.clock.now()
    immediate(this.db, () => {
      this.db
        .prepare(
          `INSERT INTO provider_b_config (id, base_url, api_key, connected_at, updated_at) VALUES (1, ?, ?, ?, ?)
           ON CONFLICT (id) DO UPDATE SET base_url = excluded.base_url, api_key = excluded.api_key,
             updated_at = excluded.updated_at`,
        )
        .run(s.baseUrl, s.apiKey, now, now)
      this.setActive('zaprite', now)
      this.audit.record({
        actor: 'admin',
        action: 'provider.connected',
        targetType: 'provider',
        targetId: 'zaprite',
        details: { base_url: s.baseUrl },
      })
    })
    this.logger.info('Zaprite connected and active', { base_url: s.baseUrl })
    return this.status()
  }

  /** Makes an already-connected provider the active one. */
  activate(kind: ProviderKind): ProvidersStatus {
    if (!this.forKind(kind)) throw new ApiError('conflict', `${kind} is not connected`)
    immediate(this.db, () => {
      this.setActive(kind, this.clock.now())
      this.audit.record({
        actor: 'admin',
        action: 'provider.activated',
        targetType: 'provider',
        targetId: kind,
        details: {},
      })
    })
    return this.status()
  }

  /** Clears the stored credentials; when it was active, no provider is active afterwards. */
  disconnect(kind: ProviderKind): ProvidersStatus {
    immediate(this.db, () => {
      this.db.prepare(kind === 'btcpay' ? 'DELETE FROM provider_a_config' : 'DELETE FROM provider_b_config').run()
      const row = this.db.prepare('SELECT value FROM settings WHERE key = ?').get(ACTIVE_KEY) as
        { value: string } | undefined
      if (row?.value === kind) this.db.prepare('DELETE FROM settings WHERE key = ?').run(ACTIVE_KEY)
      this.audit.record({
        actor: 'admin',
        action: 'provider.disconnected',
        targetType: 'provider',
        targetId: kind,
        details: {},
      })
    })
    this.logger.info(`${kind} disconnected`)
    return this.status()
  }

  private async validate(provider: PaymentProvider, signal?: AbortSignal): Promise<void> {
    try {
      await provider.verifyCredentials(signal)
    } catch (err) {
      const msg = err instanceof ApiError ? err.message : 'the provider could not be reached'
      this.logger.warn(`${provider.kind} connect refused: ${msg}`)
      throw new ApiError('bad_input', `${provider.kind} did not accept these credentials: ${msg}`)
    }
  }

  private setActive(kind: ProviderKind, now: number): void {
    this.db
      .prepare(
        `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
      )
      .run(ACTIVE_KEY, kind, now)
  }
}
