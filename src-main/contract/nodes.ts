import type { ContractTable } from './define'

/** The nodes methods (see DESIGN.md, The contract). */
export const nodesContract = {} satisfies ContractTable
