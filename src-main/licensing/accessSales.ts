import type { AccessSales } from '../platform/accessKeys'
import type { LicensingDb } from './db'
import { parseAccess } from './json'

/**
 * Whether any tier carries an access block, the gateway's question on keyless requests from
 * outside the LAN (issue 45). Held in memory and read again by the catalog after every change to a
 * tier (created, changed, archived, deleted), so a request never costs a query. An archived tier
 * still counts: the licenses sold on it keep their gateway keys. A read that fails (a damaged
 * database) keeps the answer on "sells": refusing strangers without a key is the safe side.
 */
export class AccessSalesRecord implements AccessSales {
  private readonly read: () => { access: string | null }[]
  private sells: boolean

  constructor(db: LicensingDb) {
    const stmt = db.prepare('SELECT access FROM policies WHERE access IS NOT NULL')
    this.read = () => stmt.all() as { access: string | null }[]
    this.sells = this.readNow()
  }

  sellsAccess(): boolean {
    return this.sells
  }

  /** A tier changed: read the answer again. */
  refresh(): void {
    this.sells = this.readNow()
  }

  private readNow(): boolean {
    try {
      return this.read().some((r) => parseAccess(r.access) !== null)
    } catch {
      return true
    }
  }
}
