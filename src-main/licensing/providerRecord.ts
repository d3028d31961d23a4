import type { InvoiceRow } from './invoices'
import type { ProviderInvoiceSnapshot } from './providers/types'
import type { Settlement, SettledBy } from './settlement'

/** What acting on a provider's record of one invoice did. */
export type RecordOutcome = 'settled' | 'flagged' | 'expired' | 'invalid' | 'pending' | 'already_settled'

/**
 * Acts on a provider record just fetched from the provider (never on a webhook's word): a paid
 * record settles only when its amount, currency and store match the invoice (settlement's
 * judgePayment), an underpaid one is flagged, expired/invalid ones close a pending invoice.
 */
export function applyProviderRecord(
  settlement: Settlement,
  inv: InvoiceRow,
  snap: ProviderInvoiceSnapshot,
  expectedStoreId: string | null,
  by: SettledBy,
): RecordOutcome {
  if (inv.status === 'settled') return 'already_settled'
  if (snap.status === 'settled' || snap.paidVerdict === 'under') {
    const via = { ...by, via: `${by.via} (confirmed ${snap.providerStatus})` }
    const out = settlement.settleConfirmed(inv.id, snap, expectedStoreId, via)
    if (out.kind === 'refused') return 'flagged'
    return out.kind === 'already_settled' ? 'already_settled' : 'settled'
  }
  if (snap.status === 'expired' || snap.status === 'invalid') {
    return settlement.markUnpaid(inv.id, snap.status, by) ? snap.status : 'pending'
  }
  return 'pending'
}
