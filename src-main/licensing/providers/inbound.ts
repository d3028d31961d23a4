import { ApiError } from '../../contract/errors'
import type { Logger } from '../../core/logger'
import type { InvoiceStore } from '../invoices'
import { applyProviderRecord } from '../providerRecord'
import type { Settlement, SettledBy } from '../settlement'
import type { ProviderConnections } from './connections'
import { WebhookRejected, type ProviderKind } from './types'

export interface WebhookAnswer {
  readonly status: number
  readonly body: { ok: boolean; outcome?: string; error?: string; message?: string }
}

const reject = (status: number, error: string, message: string): WebhookAnswer => ({
  status,
  body: { ok: false, error, message },
})
const done = (outcome: string): WebhookAnswer => ({ status: 200, body: { ok: true, outcome } })

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

  async handle(
    kind: ProviderKind,
    headers: Readonly<Record<string, string | string[] | undefined>>,
    raw: Buffer,
  ): Promise<WebhookAnswer> {
    const { invoices, providers, settlement, logger } = this.deps
    const provider = providers.forKind(kind)
    if (!provider) return reject(404, 'not_connected', `${kind} is not connected`)
    let hint
    try {
      hint = provider.parseWebhook(headers, raw)
    } catch (err) {
      if (err instanceof WebhookRejected) {
        logger.warn(`${kind} webhook rejected: ${err.message}`)
        return reject(err.status, err.status === 401 ? 'unauthorized' : 'bad_input', err.message)
      }
      throw err
    }
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
    let snapshot
    try {
      snapshot = await provider.getInvoice(hint.providerInvoiceId)
    } catch (err) {
      // The provider retries the webhook; reconciliation also catches up later.
      const msg = err instanceof ApiError ? err.message : 'lookup failed'
      logger.warn(`${kind} webhook: re-fetching ${hint.providerInvoiceId} failed: ${msg}`)
      return reject(502, 'upstream_unreachable', `could not confirm the order with ${kind}`)
    }
    if (snapshot.localInvoiceId !== null && snapshot.localInvoiceId !== inv.id) {
      return reject(409, 'conflict', 'the order belongs to another invoice')
    }
    if (kind === 'zaprite' && snapshot.localInvoiceId === null) {
      return reject(409, 'conflict', 'the order carries no externalUniqId')
    }
    const outcome = applyProviderRecord(settlement, inv, snapshot, providers.expectedStoreId(kind), by)
    return done(outcome === 'pending' ? 'still_pending' : outcome)
  }
}
