import type { ContractTable } from './define'

/** The gateway methods (see DESIGN.md, The contract). */
export const gatewayContract = {} satisfies ContractTable
