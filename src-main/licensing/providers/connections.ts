import type { ProvidersStatus } from '../../contract/licensing'
import { ApiError } from '../../contract/errors'
import type { Clock } from '../../lib/clock'
import { redactUrlCredentials, type Logger } from '../../lib/logger'
import type { AuditLog } from '../audit'
import { immediate, type LicensingDb } from '../db'
import { BtcpayProvider } from './btcpay'
import { ZapriteProvider } from './zaprite'
import { BtcpaySettings, ProviderKind, ZAPRITE_DEFAULT_BASE_URL, ZapriteSettings, type PaymentProvider } from './types'

type ConnectionState = ProvidersStatus['btcpay']['state']

const ACTIVE_KEY = 'active_provider'

interface BtcpayRow {
  base_url: string
  api_key: string
  store_id: string
  webhook_id: string | null
  webhook_secret: string | null
  connected_at: number
  settling_since: number | null
}
interface ZapriteRow {
  base_url: string
  api_key: string
  webhook_id: string | null
  connected_at: number
  settling_since: number | null
}

export interface ProviderFactory {
  btcpay(s: BtcpaySettings): BtcpayProvider
  zaprite(s: ZapriteSettings): ZapriteProvider
}

const TABLE: Record<ProviderKind, string> = { btcpay: 'provider_a_config', zaprite: 'provider_b_config' }

const defaultFactory: ProviderFactory = {
  btcpay: (s) => new BtcpayProvider(s),
  zaprite: (s) => new ZapriteProvider(s),
}

/**
 * The stored provider connections (`provider_a_config` = BTCPay, `provider_b_config` = Zaprite)
 * and which one is active. Connecting validates the credentials at the provider first; only then
 * are they saved and the active provider swapped, in one transaction. A provider that is replaced
 * stays on standby and one that is disconnected while invoices are open is kept read-only
 * ("settling"): either way it still verifies webhooks and answers reconciliation for the invoices
 * created through it, so switching never strands a buyer who already paid. A settling provider is
 * forgotten once its last open invoice has settled or expired, or earlier when the admin confirms.
 */
export class ProviderConnections {
  constructor(
    private readonly db: LicensingDb,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly audit: AuditLog,
    /** Public base URL, for the webhook addresses the operator configures at each provider. */
    private readonly publicUrl: () => string,
    readonly factory: ProviderFactory = defaultFactory,
  ) {
    for (const s of [this.btcpayRow()?.api_key, this.btcpayRow()?.webhook_secret, this.zapriteRow()?.api_key]) {
      logger.redactor.add(s)
    }
  }

  private btcpayRow(): BtcpayRow | undefined {
    return this.db
      .prepare(
        `SELECT base_url, api_key, store_id, webhook_id, webhook_secret, connected_at, settling_since
         FROM provider_a_config WHERE id = 1`,
      )
      .get() as BtcpayRow | undefined
  }

  private zapriteRow(): ZapriteRow | undefined {
    return this.db
      .prepare('SELECT base_url, api_key, webhook_id, connected_at, settling_since FROM provider_b_config WHERE id = 1')
      .get() as ZapriteRow | undefined
  }

  private row(kind: ProviderKind): BtcpayRow | ZapriteRow | undefined {
    return kind === 'btcpay' ? this.btcpayRow() : this.zapriteRow()
  }

  /** Pending invoices created through `kind`. */
  openInvoices(kind: ProviderKind): number {
    return (
      this.db.prepare("SELECT count(*) AS n FROM invoices WHERE provider = ? AND status = 'pending'").get(kind) as {
        n: number
      }
    ).n
  }

  /** The store a BTCPay record must belong to; null for Zaprite (one organisation per key). */
  expectedStoreId(kind: ProviderKind): string | null {
    return kind === 'btcpay' ? (this.btcpayRow()?.store_id ?? null) : null
  }

  private stateOf(kind: ProviderKind, active: ProviderKind | null): ConnectionState {
    const r = this.row(kind)
    if (!r) return 'disconnected'
    if (r.settling_since !== null) return 'settling'
    if (active === kind) return 'active'
    return this.openInvoices(kind) > 0 ? 'settling' : 'standby'
  }

  activeKind(): ProviderKind | null {
    const row = this.db.prepare('SELECT value FROM settings WHERE key = ?').get(ACTIVE_KEY) as
      { value: string } | undefined
    const kind = ProviderKind.safeParse(row?.value)
    if (!kind.success) return null
    const stored = this.row(kind.data)
    return stored && stored.settling_since === null && this.forKind(kind.data) ? kind.data : null
  }

  /** The provider new checkouts go to, or null when none is connected. */
  active(): PaymentProvider | null {
    const kind = this.activeKind()
    return kind ? this.forKind(kind) : null
  }

  /** A provider by kind — active, standby or settling — when its credentials are stored. */
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
    const flagged = this.db.prepare('SELECT count(*) AS n FROM invoices WHERE payment_flag IS NOT NULL').get() as {
      n: number
    }
    return {
      active,
      flagged_invoices: flagged.n,
      btcpay: {
        ...this.connectionStatus('btcpay', b, active),
        store_id: b?.store_id ?? null,
        has_webhook_secret: Boolean(b?.webhook_secret),
      },
      zaprite: this.connectionStatus('zaprite', this.zapriteRow(), active),
    }
  }

  /** What the admin sees of one provider's connection, common to both kinds. */
  private connectionStatus(
    kind: ProviderKind,
    r: BtcpayRow | ZapriteRow | undefined,
    active: ProviderKind | null,
  ): ProvidersStatus['zaprite'] {
    return {
      connected: r !== undefined && r.settling_since === null,
      active: active === kind,
      base_url: r ? redactUrlCredentials(r.base_url) : null,
      connected_at: r?.connected_at ?? null,
      webhook_url: `${this.publicUrl()}/v1/${kind}/webhook`,
      state: this.stateOf(kind, active),
      open_invoices: this.openInvoices(kind),
      webhook_id: r?.webhook_id ?? null,
    }
  }

  /**
   * Saves checked BTCPay credentials and makes BTCPay active. `webhookId` is BTCPay's id of the
   * webhook Tandem registered itself (the authorization flow); pasted credentials have none.
   */
  async connectBtcpay(
    input: BtcpaySettings,
    signal?: AbortSignal,
    opts: { webhookId?: string; skipCheck?: boolean } = {},
  ): Promise<ProvidersStatus> {
    const s = BtcpaySettings.parse({ ...input, baseUrl: input.baseUrl.replace(/\/+$/, '') })
    this.logger.redactor.add(s.apiKey)
    this.logger.redactor.add(s.webhookSecret)
    const old = this.btcpayRow()
    // The store is the account: a moved server (new URL, same store) keeps serving its invoices.
    this.refuseStranding('btcpay', old && old.store_id !== s.storeId)
    if (!opts.skipCheck) await this.validate(this.factory.btcpay(s), signal)
    const now = this.clock.now()
    immediate(this.db, () => {
      this.db
        .prepare(
          `INSERT INTO provider_a_config
             (id, base_url, api_key, store_id, webhook_id, webhook_secret, connected_at, updated_at, settling_since)
           VALUES (1, ?, ?, ?, ?, ?, ?, ?, NULL)
           ON CONFLICT (id) DO UPDATE SET base_url = excluded.base_url, api_key = excluded.api_key,
             store_id = excluded.store_id, webhook_id = excluded.webhook_id, webhook_secret = excluded.webhook_secret,
             updated_at = excluded.updated_at, settling_since = NULL`,
        )
        .run(s.baseUrl, s.apiKey, s.storeId, opts.webhookId ?? null, s.webhookSecret, now, now)
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
    // A Zaprite key names no organisation we could compare, so a new key is taken as the same
    // account; orders it no longer knows are closed after three "not found" answers.
    const old = this.zapriteRow()
    const zaprite = this.factory.zaprite(s)
    await this.validate(zaprite, signal)
    const webhookId = await this.zapriteWebhook(zaprite, old?.base_url === s.baseUrl ? old.webhook_id : null, signal)
    const now = this.clock.now()
    immediate(this.db, () => {
      this.db
        .prepare(
          `INSERT INTO provider_b_config (id, base_url, api_key, webhook_id, connected_at, updated_at, settling_since)
           VALUES (1, ?, ?, ?, ?, ?, NULL)
           ON CONFLICT (id) DO UPDATE SET base_url = excluded.base_url, api_key = excluded.api_key,
             webhook_id = excluded.webhook_id, updated_at = excluded.updated_at, settling_since = NULL`,
        )
        .run(s.baseUrl, s.apiKey, webhookId, now, now)
      this.setActive('zaprite', now)
      this.audit.record({
        actor: 'admin',
        action: 'provider.connected',
        targetType: 'provider',
        targetId: 'zaprite',
        details: { base_url: s.baseUrl, webhook_id: webhookId },
      })
    })
    this.logger.info('Zaprite connected and active', { base_url: s.baseUrl, webhook_id: webhookId })
    return this.status()
  }

  /**
   * Registers Tandem's webhook at Zaprite, where its API allows, unless one is already recorded
   * for this account. A failure does not block connecting: the operator can add the URL by hand
   * and reconciliation catches payments meanwhile.
   */
  private async zapriteWebhook(
    zaprite: ZapriteProvider,
    existing: string | null,
    signal?: AbortSignal,
  ): Promise<string | null> {
    if (existing) return existing
    try {
      const id = await zaprite.registerWebhook(`${this.publicUrl()}/v1/zaprite/webhook`, signal)
      if (!id) this.logger.info('Zaprite offers no webhook registration here; add the webhook URL in Zaprite')
      return id
    } catch (err) {
      const msg = err instanceof ApiError ? err.message : 'the provider could not be reached'
      this.logger.warn(`Zaprite webhook registration failed: ${msg}`)
      return null
    }
  }

  /**
   * Refuses credentials for another BTCPay store while invoices created through the stored one
   * are still open: saving them would strand those buyers.
   */
  private refuseStranding(kind: ProviderKind, otherAccount: boolean | undefined): void {
    const open = otherAccount ? this.openInvoices(kind) : 0
    if (open > 0) {
      throw new ApiError(
        'conflict',
        `${kind} is settling ${open} open invoice(s) for the stored store; wait for them or forget it first`,
      )
    }
  }

  /** Makes an already-connected provider the active one. */
  activate(kind: ProviderKind): ProvidersStatus {
    if (!this.forKind(kind)) throw new ApiError('conflict', `${kind} is not connected`)
    if (this.row(kind)?.settling_since != null) {
      throw new ApiError(
        'conflict',
        `${kind} was disconnected and is only settling its open invoices; connect it again`,
      )
    }
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

  /**
   * Disconnects `kind`: no new purchases go to it. With invoices still open its credentials are
   * kept read-only ("settling") until they close; otherwise they are cleared.
   */
  disconnect(kind: ProviderKind): ProvidersStatus {
    let settling = 0
    immediate(this.db, () => {
      const now = this.clock.now()
      settling = this.row(kind) ? this.openInvoices(kind) : 0
      if (settling > 0) {
        this.db.prepare(`UPDATE ${TABLE[kind]} SET settling_since = coalesce(settling_since, ?) WHERE id = 1`).run(now)
      } else {
        this.db.prepare(`DELETE FROM ${TABLE[kind]}`).run()
      }
      const row = this.db.prepare('SELECT value FROM settings WHERE key = ?').get(ACTIVE_KEY) as
        { value: string } | undefined
      if (row?.value === kind) this.db.prepare('DELETE FROM settings WHERE key = ?').run(ACTIVE_KEY)
      this.audit.record({
        actor: 'admin',
        action: 'provider.disconnected',
        targetType: 'provider',
        targetId: kind,
        details: { settling_open_invoices: settling },
      })
    })
    this.logger.info(
      settling > 0 ? `${kind} disconnected; settling ${settling} open invoice(s)` : `${kind} disconnected`,
    )
    return this.status()
  }

  /**
   * Forgets a settling (or standby) provider's credentials now, open invoices or not; the admin
   * confirmed. Its open invoices can then only expire. The active provider is disconnected first.
   */
  forget(kind: ProviderKind): ProvidersStatus {
    if (this.activeKind() === kind) throw new ApiError('conflict', `${kind} is active; disconnect it first`)
    const open = this.openInvoices(kind)
    immediate(this.db, () => {
      this.db.prepare(`DELETE FROM ${TABLE[kind]}`).run()
      this.audit.record({
        actor: 'admin',
        action: 'provider.forgotten',
        targetType: 'provider',
        targetId: kind,
        details: { open_invoices: open },
      })
    })
    this.logger.warn(`${kind} forgotten with ${open} open invoice(s)`)
    return this.status()
  }

  /** Forgets settling providers whose last open invoice has closed (reconciliation calls it). */
  forgetDrained(): void {
    for (const kind of ProviderKind.options) {
      const r = this.row(kind)
      if (!r || r.settling_since === null || this.openInvoices(kind) > 0) continue
      immediate(this.db, () => {
        this.db.prepare(`DELETE FROM ${TABLE[kind]} WHERE settling_since IS NOT NULL`).run()
        this.audit.record({
          actor: 'system',
          action: 'provider.forgotten',
          targetType: 'provider',
          targetId: kind,
          details: { open_invoices: 0 },
        })
      })
      this.logger.info(`${kind} settled its last open invoice; credentials forgotten`)
    }
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
