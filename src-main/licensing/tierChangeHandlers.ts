/**
 * Handlers of the tier-change methods (contract `licensingSubscriptionsContract`): the buyer's
 * quote and upgrade, the operator's change-tier and history. module.ts spreads them in.
 */
import type { Handlers } from '../contract/define'
import type { licensingSubscriptionsContract } from '../contract/licensing'
import type { TierChanges } from './tierChanges'

type TierChangeMethods = Pick<
  typeof licensingSubscriptionsContract,
  'licUpgradeQuote' | 'licUpgrade' | 'licAdminChangeTier' | 'licAdminTierChanges'
>

export function tierChangeHandlers(tierChanges: TierChanges): Handlers<TierChangeMethods> {
  return {
    licUpgradeQuote: async (input) => tierChanges.quote(input),
    licUpgrade: async (input, ctx) => tierChanges.upgrade(input, ctx.signal),
    licAdminChangeTier: async (input, ctx) => tierChanges.adminChange(input, ctx.signal),
    licAdminTierChanges: async ({ id }) => tierChanges.history(id),
  }
}
