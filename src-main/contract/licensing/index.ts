import type { ContractTable } from '../define'
import { licensingAdminContract } from './admin'
import { licensingBuyerContract } from './buyer'
import { licensingPaymentsContract } from './payments'
import { licensingSubscriptionsContract } from './subscriptions'
import { licensingValidationsContract } from './validations'

export * from './schemas'
export * from './buyer'
export * from './admin'
export * from './payments'
export * from './subscriptions'
export * from './validations'

/** The licensing methods (spec 001): buyer API, admin API, and payments, each in its own file. */
export const licensingContract = {
  ...licensingBuyerContract,
  ...licensingAdminContract,
  ...licensingPaymentsContract,
  ...licensingSubscriptionsContract,
  ...licensingValidationsContract,
} satisfies ContractTable
