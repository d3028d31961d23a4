/**
 * Handlers of the subscription methods (contract `licensingSubscriptionsContract`): the buyer's
 * cancel, the operator's list and cancel. module.ts spreads them in.
 */
import type { Handlers } from '../contract/define'
import type { licensingSubscriptionsContract } from '../contract/licensing'
import type { Clock } from '../lib/clock'
import { subscriptionsCsv } from './exports'
import type { Subscriptions } from './subscriptions'

type SubscriptionMethods = Pick<
  typeof licensingSubscriptionsContract,
  'licCancelSubscription' | 'licAdminSubscriptions' | 'licAdminCancelSubscription' | 'licAdminExportSubscriptions'
>

export function subscriptionHandlers(subscriptions: Subscriptions, clock: Clock): Handlers<SubscriptionMethods> {
  return {
    licCancelSubscription: async ({ license_key }) => subscriptions.cancelByKey(license_key),
    licAdminSubscriptions: async (q) => subscriptions.list(q),
    licAdminExportSubscriptions: async (q) => subscriptionsCsv((max) => subscriptions.matching(q, max), clock.now()),
    licAdminCancelSubscription: async ({ id, reason }) => {
      subscriptions.cancel(id, 'admin', reason ?? null)
      return subscriptions.view(id)
    },
  }
}
