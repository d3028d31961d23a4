import { ApiError } from '../contract/errors'
import type { Clock } from '../core/clock'
import type { Logger } from '../core/logger'
import type { InvoiceRow, InvoiceStore } from './invoices'
import type { ProviderConnections } from './providers/connections'
import { ProviderKind } from './providers/types'
import type { Settlement } from './settlement'

/** An invoice that never got a provider reference (checkout creation died) is closed after this. */
const ORPHAN_AFTER_MS = 10 * 60 * 1000

export interface ReconcileReport {
  checked: number
  settled: number
  expired: number
  invalid: number
  errors: number
}

export type RecheckOutcome = 'settled' | 'expired' | 'invalid' | 'pending' | 'unreachable' | 'not_pending'

/**
 * The reconciliation worker: invoices still pending locally are re-checked at their provider, so
 * a missed webhook still issues the license, and invoices past their expiry are closed. Time comes
 * from the injected clock; `tick()` is one sweep (tests call it directly).
 */
export class Reconciler {
  private timer: NodeJS.Timeout | null = null
  private running: Promise<unknown> | null = null

  constructor(
    private readonly deps: {
      clock: Clock
      logger: Logger
      invoices: InvoiceStore
      providers: ProviderConnections
      settlement: Settlement
      intervalMs?: number
      batch?: number
    },
  ) {}

  async tick(): Promise<ReconcileReport> {
    const report: ReconcileReport = { checked: 0, settled: 0, expired: 0, invalid: 0, errors: 0 }
    for (const inv of this.deps.invoices.pending(this.deps.batch ?? 25)) {
      report.checked++
      const outcome = await this.check(inv)
      if (outcome === 'settled' || outcome === 'expired' || outcome === 'invalid') report[outcome]++
      if (outcome === 'unreachable') report.errors++
    }
    if (report.settled + report.expired + report.invalid > 0) this.deps.logger.info('reconciliation', { ...report })
    return report
  }

  /** Re-checks one invoice now (the admin's "recheck" button). */
  async recheck(invoiceId: string): Promise<RecheckOutcome> {
    const inv = this.deps.invoices.get(invoiceId)
    if (!inv) throw new ApiError('not_found', 'no such invoice')
    if (inv.status !== 'pending' && inv.status !== 'expired') return 'not_pending'
    return this.check(inv)
  }

  private async check(inv: InvoiceRow): Promise<RecheckOutcome> {
    const { clock, providers, settlement, invoices, logger } = this.deps
    const by = { actor: 'system' as const, via: 'reconcile' }
    const now = clock.now()
    const expired = inv.expires_at !== null && now >= inv.expires_at
    if (inv.provider === 'free' && inv.amount_sats === 0) {
      // Nothing to pay: a zero-total purchase whose settlement did not complete settles now.
      settlement.settle(inv.id, { actor: 'system', via: 'reconcile (zero amount)' })
      return 'settled'
    }
    const kind = ProviderKind.safeParse(inv.provider)
    const provider = kind.success ? providers.forKind(kind.data) : null
    if (!inv.provider_invoice_id) {
      if (now - inv.created_at >= ORPHAN_AFTER_MS && settlement.markUnpaid(inv.id, 'invalid', by)) return 'invalid'
      return 'pending'
    }
    if (!provider) {
      if (expired && settlement.markUnpaid(inv.id, 'expired', by)) return 'expired'
      invoices.touch(inv.id, now)
      return 'pending'
    }
    let snap
    try {
      snap = await provider.getInvoice(inv.provider_invoice_id)
    } catch (err) {
      logger.warn('reconcile: provider lookup failed', {
        invoice: inv.id,
        provider: provider.kind,
        error: err instanceof ApiError ? err.message : String(err),
      })
      if (expired && settlement.markUnpaid(inv.id, 'expired', by)) return 'expired'
      invoices.touch(inv.id, clock.now())
      return 'unreachable'
    }
    if (snap.localInvoiceId !== null && snap.localInvoiceId !== inv.id) {
      logger.warn('reconcile: provider record names another invoice', { invoice: inv.id })
      invoices.touch(inv.id, clock.now())
      return 'pending'
    }
    if (snap.status === 'settled') {
      settlement.settle(inv.id, { actor: 'system', via: `reconcile (${provider.kind} ${snap.providerStatus})` })
      return 'settled'
    }
    if (snap.status === 'expired' || snap.status === 'invalid') {
      return settlement.markUnpaid(inv.id, snap.status, by) ? snap.status : 'pending'
    }
    if (expired && settlement.markUnpaid(inv.id, 'expired', by)) return 'expired'
    invoices.touch(inv.id, clock.now())
    return 'pending'
  }

  start(): void {
    if (this.timer) return
    this.timer = setInterval(() => {
      if (this.running) return
      this.running = this.tick()
        .catch((err: unknown) => this.deps.logger.error('reconciliation failed', { error: err }))
        .finally(() => {
          this.running = null
        })
    }, this.deps.intervalMs ?? 60_000)
    this.timer.unref()
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    await this.running
  }
}
