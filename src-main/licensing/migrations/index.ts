/**
 * Numbered, additive migrations of the licensing database, applied in id order by
 * `runMigrations` (db.ts). Never edit a migration once committed: add the next number.
 * A migration that rebuilds a table sets `rebuild: true` and must be idempotent.
 */
import { m001Initial } from './001_initial'
import { m002MultiCurrency } from './002_multi_currency'
import { m003TiersSubscriptions } from './003_tiers_subscriptions'
import { m004ProductPriceChecks } from './004_product_price_checks'
import { m005RedemptionStatus } from './005_redemption_status'
import { m006SubscriptionFailures } from './006_subscription_failures'
import { m007PricingCapsRedirects } from './007_pricing_caps_redirects'
import { m008PaymentChecks } from './008_payment_checks'
import { m009ValidationLog } from './009_validation_log'
import { m010AdminListIndexes } from './010_admin_list_indexes'
import { m011SubscriptionDueDate } from './011_subscription_due_date'
import { m012PaymentFlags } from './012_payment_flags'
import { m013PolicyAccess } from './013_policy_access'
import { m014GatewayKeyShown } from './014_gateway_key_shown'
import { m015AccessTopUps } from './015_access_top_ups'
import { m016TopUpInvoices } from './016_top_up_invoices'

export type { Migration } from '../../lib/sqlite'
import type { Migration } from '../../lib/sqlite'

export const MIGRATIONS: readonly Migration[] = [
  m001Initial,
  m002MultiCurrency,
  m003TiersSubscriptions,
  m004ProductPriceChecks,
  m005RedemptionStatus,
  m006SubscriptionFailures,
  m007PricingCapsRedirects,
  m008PaymentChecks,
  m009ValidationLog,
  m010AdminListIndexes,
  m011SubscriptionDueDate,
  m012PaymentFlags,
  m013PolicyAccess,
  m014GatewayKeyShown,
  m015AccessTopUps,
  m016TopUpInvoices,
]
