/**
 * CSV exports of the licensing admin lists (licenses, invoices, subscriptions): the same filter
 * and sort as the list on screen, every matching row up to CSV_MAX_ROWS, names beside slugs.
 */
import type { z } from 'zod'
import { ApiError } from '../contract/errors'
import {
  CSV_MAX_ROWS,
  type CsvExport,
  type InvoiceView,
  type LicenseView,
  type SubscriptionView as SubscriptionViewSchema,
} from '../contract/licensing'
import { exportName, isoOrNull, toCsv, type CsvColumn } from './csv'

type SubscriptionView = z.infer<typeof SubscriptionViewSchema>

const LICENSE_COLUMNS: readonly CsvColumn<LicenseView>[] = [
  { header: 'id', value: (l) => l.id },
  { header: 'product', value: (l) => l.product_slug },
  { header: 'product_name', value: (l) => l.product_name },
  { header: 'tier', value: (l) => l.policy_slug },
  { header: 'tier_name', value: (l) => l.policy_name },
  { header: 'status', value: (l) => l.status },
  { header: 'status_reason', value: (l) => l.status_reason },
  { header: 'source', value: (l) => l.source },
  { header: 'buyer_email', value: (l) => l.buyer_email },
  { header: 'buyer_note', value: (l) => l.buyer_note },
  { header: 'invoice_id', value: (l) => l.invoice_id },
  { header: 'issued_at', value: (l) => isoOrNull(l.issued_at) },
  { header: 'expires_at', value: (l) => isoOrNull(l.expires_at) },
  { header: 'max_machines', value: (l) => l.max_machines },
  { header: 'active_machines', value: (l) => l.active_machines },
  { header: 'entitlements', value: (l) => l.entitlements.join(' ') },
  { header: 'is_trial', value: (l) => l.is_trial },
]

const INVOICE_COLUMNS: readonly CsvColumn<InvoiceView>[] = [
  { header: 'id', value: (i) => i.id },
  { header: 'kind', value: (i) => i.kind },
  { header: 'status', value: (i) => i.status },
  { header: 'product', value: (i) => i.product_slug },
  { header: 'product_name', value: (i) => i.product_name },
  { header: 'tier', value: (i) => i.policy_slug },
  { header: 'tier_name', value: (i) => i.policy_name },
  { header: 'listed_currency', value: (i) => i.listed_currency },
  { header: 'listed_value', value: (i) => i.listed_value },
  { header: 'amount_sats', value: (i) => i.amount_sats },
  { header: 'exchange_rate_centibps', value: (i) => i.exchange_rate_centibps },
  { header: 'discount_code', value: (i) => i.discount_code },
  { header: 'discount_value', value: (i) => i.discount_value },
  { header: 'provider', value: (i) => i.provider },
  { header: 'provider_invoice_id', value: (i) => i.provider_invoice_id },
  { header: 'buyer_email', value: (i) => i.buyer_email },
  { header: 'license_id', value: (i) => i.license_id },
  { header: 'created_at', value: (i) => isoOrNull(i.created_at) },
  { header: 'settled_at', value: (i) => isoOrNull(i.settled_at) },
]

const SUBSCRIPTION_COLUMNS: readonly CsvColumn<SubscriptionView>[] = [
  { header: 'id', value: (s) => s.id },
  { header: 'license_id', value: (s) => s.license_id },
  { header: 'product', value: (s) => s.product_slug },
  { header: 'product_name', value: (s) => s.product_name },
  { header: 'tier', value: (s) => s.policy_slug },
  { header: 'tier_name', value: (s) => s.policy_name },
  { header: 'status', value: (s) => s.status },
  { header: 'buyer_email', value: (s) => s.buyer_email },
  { header: 'listed_currency', value: (s) => s.listed_currency },
  { header: 'listed_value', value: (s) => s.listed_value },
  { header: 'period_days', value: (s) => s.period_days },
  { header: 'cycles', value: (s) => s.cycles.length },
  { header: 'next_renewal_at', value: (s) => isoOrNull(s.next_renewal_at) },
  { header: 'due_at', value: (s) => isoOrNull(s.due_at) },
  { header: 'consecutive_failures', value: (s) => s.consecutive_failures },
  { header: 'failure_reason', value: (s) => s.failure_reason },
  { header: 'cancelled_at', value: (s) => isoOrNull(s.cancelled_at) },
  { header: 'created_at', value: (s) => isoOrNull(s.created_at) },
]

/** Reads one row past the cap so an export that would be cut short is refused instead. */
function exportRows<T>(
  what: string,
  columns: readonly CsvColumn<T>[],
  read: (max: number) => Iterable<T>,
  nowMs: number,
): CsvExport {
  const rows = [...read(CSV_MAX_ROWS + 1)]
  if (rows.length > CSV_MAX_ROWS)
    throw new ApiError('bad_input', `more than ${CSV_MAX_ROWS} ${what} match; narrow the filter to export them`)
  return { filename: exportName(what, nowMs), ...toCsv(columns, rows) }
}

export const licensesCsv = (read: (max: number) => Iterable<LicenseView>, nowMs: number): CsvExport =>
  exportRows('licenses', LICENSE_COLUMNS, read, nowMs)
export const invoicesCsv = (read: (max: number) => Iterable<InvoiceView>, nowMs: number): CsvExport =>
  exportRows('invoices', INVOICE_COLUMNS, read, nowMs)
export const subscriptionsCsv = (read: (max: number) => Iterable<SubscriptionView>, nowMs: number): CsvExport =>
  exportRows('subscriptions', SUBSCRIPTION_COLUMNS, read, nowMs)
