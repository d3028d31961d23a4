import { ApiError } from '../../contract/errors'
import type { Logger } from '../../lib/logger'
import type { InvoiceStore } from '../invoices'
import { applyProviderRecord } from '../providerRecord'
import type { Settlement, SettledBy } from '../settlement'
import type { ProviderConnections } from './connections'
import {
  WebhookRejected,
  type PaymentProvider,
  type ProviderInvoiceSnapshot,
  type ProviderKind,
  type WebhookHint,
} from './types'

export interface WebhookAnswer {
  readonly status: number
  readonly body: { ok: boolean; outcome?: string; error?: string; message?: string }
}

const reject = (status: number, error: string, message: string): WebhookAnswer => ({
  status,
  body: { ok: false, error, message },
})
const done = (outcome: string): WebhookAnswer => ({ status: 200, body: { ok: true, outcome } })

type WebhookHeaders = Readonly<Record<string, string | string[] | undefined>>

/**
 * The re-fetched order must be the invoice the hint resolved to; a Zaprite order must also name it
 * (its webhooks are unsigned, so the echoed id is the only tie to our invoice).
 */
function orderConflict(kind: ProviderKind, snapshot: ProviderInvoiceSnapshot, invoiceId: string): WebhookAnswer | null {
  if (snapshot.localInvoiceId !== null && snapshot.localInvoiceId !== invoiceId) {
    return reject(409, 'conflict', 'the order belongs to another invoice')
  }
  if (kind === 'zaprite' && snapshot.localInvoiceId === null) {
    return reject(409, 'conflict', 'the order carries no externalUniqId')
  }
  return null
}

/**
 * Inbound provider webhooks. Both providers go through one handler because validating an event
 * is part of the provider interface: BTCPay's signature is checked by `parseWebhook`; Zaprite
 * signs nothing, so its event is only a hint — it must name an order that resolves to a local
 * invoice in an expected state, and the order re-fetched from Zaprite decides. Replays and
 * duplicate deliveries are harmless because settlement is idempotent.
 */
export class ProviderWebhooks {
  constructor(
    private readonly deps: {
      logger: Logger
      invoices: InvoiceStore
      providers: ProviderConnections
      settlement: Settlement
    },
  ) {}

  async handle(kind: ProviderKind, headers: WebhookHeaders, raw: Buffer): Promise<WebhookAnswer> {
    const { invoices, providers, settlement } = this.deps
    const provider = providers.forKind(kind)
    if (!provider) return reject(404, 'not_connected', `${kind} is not connected`)
    const hint = this.parseHint(provider, kind, headers, raw)
    if ('body' in hint) return hint
    const inv = invoices.byProviderRef(kind, hint.providerInvoiceId)
    const by: SettledBy = { actor: 'provider', via: `${kind} webhook ${hint.eventType}` }
    if (!inv) {
      // BTCPay: a signed event for an invoice we never made (another app on the same store): acknowledge, ignore.
      return kind === 'btcpay'
        ? done('ignored_unknown_invoice')
        : reject(404, 'not_found', 'the order does not resolve to a local invoice')
    }
    if (kind === 'btcpay' && hint.claimed === 'ignored') return done('ignored_event')
    if (inv.status === 'settled') return done('already_settled')

    // Even a signed event is only a hint: the invoice re-fetched from the provider decides.
    const snapshot = await this.refetch(provider, kind, hint.providerInvoiceId)
    if ('body' in snapshot) return snapshot
    const conflict = orderConflict(kind, snapshot, inv.id)
    if (conflict) return conflict
    const outcome = applyProviderRecord(settlement, inv, snapshot, providers.expectedStoreId(kind), by)
    return done(outcome === 'pending' ? 'still_pending' : outcome)
  }

  /** The delivery's hint, or the answer refusing it (bad signature or shape). */
  private parseHint(
    provider: PaymentProvider,
    kind: ProviderKind,
    headers: WebhookHeaders,
    raw: Buffer,
  ): WebhookHint | WebhookAnswer {
    try {
      return provider.parseWebhook(headers, raw)
    } catch (err) {
      if (err instanceof WebhookRejected) {
        this.deps.logger.warn(`${kind} webhook rejected: ${err.message}`)
        return reject(err.status, err.status === 401 ? 'unauthorized' : 'bad_input', err.message)
      }
      throw err
    }
  }

  /** The provider's current record of the order, or a 502 when it cannot be reached. */
  private async refetch(
    provider: PaymentProvider,
    kind: ProviderKind,
    providerInvoiceId: string,
  ): Promise<ProviderInvoiceSnapshot | WebhookAnswer> {
    try {
      return await provider.getInvoice(providerInvoiceId)
    } catch (err) {
      // The provider retries the webhook; reconciliation also catches up later.
      const msg = err instanceof ApiError ? err.message : 'lookup failed'
      this.deps.logger.warn(`${kind} webhook: re-fetching ${providerInvoiceId} failed: ${msg}`)
      return reject(502, 'upstream_unreachable', `could not confirm the order with ${kind}`)
    }
  }
}
