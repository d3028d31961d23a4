/** What the metrics domain reads of licensing: its database, queried at scrape time. */
export type { LicensingDb } from './db'
