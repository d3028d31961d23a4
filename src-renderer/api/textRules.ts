import type { TextRuleData } from 'virtual:contract-data'

/** The message of the first rule the text breaks, or null when it keeps them all. */
export function brokenRule(rules: readonly TextRuleData[], text: string): string | null {
  return rules.find((r) => !new RegExp(r.pattern, r.flags).test(text))?.message ?? null
}
