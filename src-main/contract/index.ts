import type { ContractTable, Handlers } from './define'
import { systemContract } from './system'
import { nodesContract } from './nodes'
import { gatewayContract } from './gateway'
import { licensingContract } from './licensing'
import { eventsContract } from './events'
import { modelsContract } from './models'
import { placementsContract } from './placements'
import { servicesContract } from './services'
import { docsContract } from './docs'
import { consumerKeysContract } from './consumerKeys'

/**
 * THE api contract: every method Tandem serves, over HTTP and IPC alike. Each domain keeps its
 * own table in this folder; this is where they meet.
 */
export const contract = {
  ...systemContract,
  ...nodesContract,
  ...modelsContract,
  ...placementsContract,
  ...servicesContract,
  ...gatewayContract,
  ...licensingContract,
  ...eventsContract,
  ...docsContract,
  ...consumerKeysContract,
} satisfies ContractTable

export type Contract = typeof contract
export type MethodName = keyof Contract
export type ContractHandlers = Handlers<Contract>
export * from './define'
export { ApiError } from './errors'
