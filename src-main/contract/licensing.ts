import type { ContractTable } from './define'

/** The licensing methods (see DESIGN.md, The contract). */
export const licensingContract = {} satisfies ContractTable
