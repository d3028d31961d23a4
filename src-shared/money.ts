/**
 * An amount in the smallest unit of its currency (sats for SAT and BTC, cents for USD and EUR),
 * as a person reads it. Pure: the public pages and the dashboard both use it.
 */
export function formatMoney(currency: string | null | undefined, value: number): string {
  switch (currency) {
    case 'USD':
      return `$${(value / 100).toFixed(2)}`
    case 'EUR':
      return `€${(value / 100).toFixed(2)}`
    case 'BTC':
      return `${(value / 1e8).toFixed(8)} BTC`
    default:
      return `${value.toLocaleString('en-US')} sats`
  }
}
