// The build's data from the contract (scripts/contractData.ts), typed by the contract's own types.
declare module 'virtual:contract-data' {
  type Routes = {
    readonly [M in import('../src-main/contract').MethodName]: readonly [
      import('../src-main/contract/define').HttpVerb,
      string,
    ]
  }
  /** A text rule as data: the RegExp's source and flags, and what to tell the operator. */
  export interface TextRuleData {
    readonly pattern: string
    readonly flags: string
    readonly message: string
  }
  export const routes: Routes
  export const swapPhaseTitles: Readonly<Record<import('../src-main/contract/models').SwapPhase, string>>
  export const webhookEventNames: readonly import('../src-main/contract/licensing').WebhookEventName[]
  export const modelRepoRules: readonly TextRuleData[]
}
