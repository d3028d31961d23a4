/** What the metrics domain reads of licensing: its database, queried at scrape time. */
export type { LicensingDb } from './db'
/** What the metrics domain reads of the access licenses: their current periods by tier. */
export type { AccessTierTotals } from './accessReport'
