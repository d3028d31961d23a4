import { formatMoney } from './money'

/** The terms of a tier that decide how its price reads to a buyer. */
export interface PriceTerms {
  currency: string
  value: number
  isRecurring: boolean
  renewalPeriodDays: number
  trialDays: number
  durationDays: number
}

/**
 * What a buyer sees for a tier ("$9.00 every 30 days, 14-day free trial"): one wording for the buy
 * page and the operator's tier editor, so the editor's preview is the page's text.
 */
export function priceLine(t: PriceTerms): string {
  const price = formatMoney(t.currency, t.value)
  const trial = t.trialDays > 0 ? `, ${t.trialDays}-day free trial` : ''
  if (t.isRecurring) {
    const period = t.renewalPeriodDays === 1 ? 'day' : `${t.renewalPeriodDays} days`
    return `${price} every ${period}${trial}`
  }
  const term = t.durationDays > 0 ? ` for ${t.durationDays} days` : ', one-time'
  return `${price}${term}${trial}`
}
