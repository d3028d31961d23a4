import { ApiError } from '../contract/errors'
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import { WriteOutage } from '../lib/writeOutage'
import type { InvoiceRow, InvoiceStore } from './invoices'
import { applyProviderRecord } from './providerRecord'
import type { ProviderConnections } from './providers/connections'
import { ProviderKind, type PaymentProvider } from './providers/types'
import type { Settlement } from './settlement'

function errorText(err: unknown): string {
  return err instanceof ApiError ? err.message : String(err)
}

function count(report: ReconcileReport, outcome: RecheckOutcome): void {
  if (outcome === 'settled' || outcome === 'flagged' || outcome === 'expired' || outcome === 'invalid')
    report[outcome]++
}

/** An invoice that never got a provider reference (checkout creation died) is closed after this. */
const ORPHAN_AFTER_MS = 10 * 60 * 1000
/** Expired invoices stay in the list window this long, so a late payment still settles. */
const LATE_PAYMENT_MS = 24 * 60 * 60 * 1000
/** Provider clocks drift: the list window opens this much before the oldest open invoice. */
const LIST_SLACK_MS = 10 * 60 * 1000
/** "Not found" this many times in a row: the provider no longer knows the invoice. */
const NOT_FOUND_LIMIT = 3
/** Single look-ups the sweep keeps in flight at once. */
const LOOKUPS_IN_FLIGHT = 5

export interface ReconcileReport {
  /** Invoices examined: found in a provider's paid list, or looked up one by one. */
  checked: number
  /** List calls made (one per provider with open invoices). */
  listed: number
  settled: number
  flagged: number
  expired: number
  invalid: number
  errors: number
}

export type RecheckOutcome = 'settled' | 'flagged' | 'expired' | 'invalid' | 'pending' | 'unreachable' | 'not_pending'

/**
 * The reconciliation worker. Each tick asks every stored provider (active, standby or settling)
 * for its recently paid invoices in one list call and settles what it finds — a lost webhook costs
 * at most one tick however many junk invoices are pending — then looks up a small batch of the
 * least recently seen pending invoices one by one, to close the ones the provider expired or no
 * longer knows, and closes local ones past their expiry. Time comes from the injected clock;
 * `tick()` is one sweep (tests call it directly).
 */
export class Reconciler {
  private timer: NodeJS.Timeout | null = null
  /** A sweep a full disk refuses is told once per outage, not once a minute. */
  private readonly outage: WriteOutage
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
      /** DATA_DIR: a SQLite I/O error there counts as a full disk when it has no room. */
      dataDir?: string
    },
  ) {
    this.outage = new WriteOutage({
      logger: deps.logger,
      clock: deps.clock,
      dataDir: deps.dataDir,
      what: 'reconciliation',
      meanwhile: 'paid invoices are settled by a later sweep or their webhook once there is room',
    })
  }

  async tick(): Promise<ReconcileReport> {
    const report: ReconcileReport = { checked: 0, listed: 0, settled: 0, flagged: 0, expired: 0, invalid: 0, errors: 0 }
    const seen = new Set<string>()
    const down = new Set<ProviderKind>()
    for (const kind of ProviderKind.options) {
      if (!(await this.listPaid(kind, report, seen))) down.add(kind)
    }
    const batch = this.deps.invoices.pending(this.deps.batch ?? 25).filter((inv) => !seen.has(inv.id))
    // A few look-ups in flight at once; each one's database writes are synchronous and short.
    for (let i = 0; i < batch.length; i += LOOKUPS_IN_FLIGHT) {
      await Promise.all(
        batch.slice(i, i + LOOKUPS_IN_FLIGHT).map(async (inv) => {
          report.checked++
          const kind = ProviderKind.safeParse(inv.provider)
          const isDown = kind.success && down.has(kind.data)
          const outcome = await this.check(inv, isDown)
          count(report, outcome)
          if (outcome === 'unreachable' && !isDown) report.errors++
        }),
      )
    }
    this.deps.providers.forgetDrained()
    if (report.settled + report.flagged + report.expired + report.invalid > 0) {
      this.deps.logger.info('reconciliation', { ...report })
    }
    return report
  }

  /** One list call at `kind` and the settlement of what it names; false when the provider failed. */
  private async listPaid(kind: ProviderKind, report: ReconcileReport, seen: Set<string>): Promise<boolean> {
    const { clock, providers, invoices, logger } = this.deps
    const provider = providers.forKind(kind)
    const since = provider ? invoices.oldestOpen(kind, clock.now(), LATE_PAYMENT_MS) : null
    if (!provider || since === null) return true
    let listed
    try {
      report.listed++
      listed = await provider.listPaid(since - LIST_SLACK_MS)
    } catch (err) {
      report.errors++
      logger.warn('reconcile: listing paid invoices failed', { provider: kind, error: errorText(err) })
      return false
    }
    for (const item of listed) {
      const inv = invoices.byProviderRef(kind, item.providerInvoiceId)
      if (!inv || (inv.status !== 'pending' && inv.status !== 'expired') || seen.has(inv.id)) continue
      seen.add(inv.id)
      report.checked++
      count(report, await this.confirm(inv, provider))
    }
    return true
  }

  /** Re-checks one invoice now (the admin's "recheck" button, a buyer's poll). */
  async recheck(invoiceId: string): Promise<RecheckOutcome> {
    const inv = this.deps.invoices.get(invoiceId)
    if (!inv) throw new ApiError('not_found', 'no such invoice')
    if (inv.status !== 'pending' && inv.status !== 'expired') return 'not_pending'
    return this.check(inv, false)
  }

  /** Fetches one invoice from its provider and acts on the record (see applyProviderRecord). */
  private async confirm(inv: InvoiceRow, provider: PaymentProvider): Promise<RecheckOutcome> {
    const { clock, providers, settlement, invoices, logger } = this.deps
    const by = { actor: 'system' as const, via: `reconcile (${provider.kind})` }
    const now = clock.now()
    const expired = inv.expires_at !== null && now >= inv.expires_at
    let snap
    try {
      snap = await provider.getInvoice(inv.provider_invoice_id!)
    } catch (err) {
      if (err instanceof ApiError && err.code === 'upstream_not_found') return this.notFound(inv, provider.kind)
      logger.warn('reconcile: provider lookup failed', {
        invoice: inv.id,
        provider: provider.kind,
        error: errorText(err),
      })
      if (expired && settlement.markUnpaid(inv.id, 'expired', by)) return 'expired'
      invoices.touch(inv.id, clock.now())
      return 'unreachable'
    }
    invoices.found(inv.id, clock.now())
    if (snap.localInvoiceId !== null && snap.localInvoiceId !== inv.id) {
      logger.warn('reconcile: provider record names another invoice', { invoice: inv.id })
      return 'pending'
    }
    const outcome = applyProviderRecord(settlement, inv, snap, providers.expectedStoreId(provider.kind), by)
    if (outcome === 'already_settled') return 'not_pending'
    if (outcome === 'pending' && expired && settlement.markUnpaid(inv.id, 'expired', by)) return 'expired'
    return outcome
  }

  private notFound(inv: InvoiceRow, kind: ProviderKind): RecheckOutcome {
    const { clock, invoices, settlement, logger } = this.deps
    if (invoices.notFound(inv.id, clock.now()) < NOT_FOUND_LIMIT) return 'pending'
    const by = { actor: 'system' as const, via: `reconcile (${kind}: not found ${NOT_FOUND_LIMIT} times)` }
    if (!settlement.markUnpaid(inv.id, 'invalid', by)) return 'pending'
    logger.warn(`reconcile: ${kind} no longer knows the invoice; marked invalid`, {
      invoice: inv.id,
      provider_invoice: inv.provider_invoice_id,
    })
    return 'invalid'
  }

  private async check(inv: InvoiceRow, providerDown: boolean): Promise<RecheckOutcome> {
    const { clock, providers, settlement, invoices } = this.deps
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
    if (!provider || providerDown) {
      if (expired && settlement.markUnpaid(inv.id, 'expired', by)) return 'expired'
      invoices.touch(inv.id, now)
      return providerDown ? 'unreachable' : 'pending'
    }
    return this.confirm(inv, provider)
  }

  start(): void {
    if (this.timer) return
    this.timer = setInterval(() => {
      if (this.running) return
      this.running = this.tick()
        .then(
          () => this.outage.written(),
          (err: unknown) => this.outage.failure(err, 'reconciliation failed'),
        )
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
