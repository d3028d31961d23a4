import { contractData } from './contractData'

// virtual:contract-data for vitest, which aliases it here: the same data, computed in the test process.
export const { routes, swapPhaseTitles, webhookEventNames, modelRepoRules } = contractData()
