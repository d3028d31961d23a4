/** The admin's search over licenses and their machines: pages, a lazy export, one license's detail. */
import type {
  LicenseFilter,
  LicenseQuery,
  LicenseView,
  MachineSort,
  MachineView,
  SortOrder,
} from '../contract/licensing'
import { ApiError } from '../contract/errors'
import { equals, matchAny, orderBy, whereAll, type LicensingDb, type SqlArg } from './db'
import { licenseView, MACHINE_SELECT, toView, VIEW_SELECT, type LicenseRow, type ViewRow } from './licenseRecords'

const MACHINE_SORT: Record<MachineSort, string> = {
  last_heartbeat_at: 'm.last_heartbeat_at',
  activated_at: 'm.activated_at',
  hostname: 'm.hostname',
  status: 'm.status',
}

export interface MachineQuery {
  license_id?: string
  include_inactive?: boolean
  q?: string
  sort?: MachineSort
  order?: SortOrder
  limit: number
  offset?: number
}

const LICENSE_SORT: Record<LicenseFilter['sort'], string> = {
  issued_at: 'l.issued_at',
  expires_at: 'l.expires_at',
  updated_at: 'l.updated_at',
  buyer_email: 'l.buyer_email',
  status: 'l.status',
  product: 'p.name',
}

/** A license list's filter; sort and order default to newest issued first. */
export type LicenseSearch = Omit<LicenseFilter, 'sort' | 'order'> & Partial<Pick<LicenseFilter, 'sort' | 'order'>>

/** The WHERE clause of a license list (joined with products as `p`). */
function licenseFilter(q: LicenseSearch): { where: string; args: SqlArg[] } {
  return whereAll([
    matchAny(['l.id', 'l.buyer_email', 'l.invoice_id', 'l.buyer_note', 'p.slug', 'p.name'], q.q),
    equals('l.product_id', q.product_id || undefined),
    equals('l.status', q.status || undefined),
  ])
}

const licenseOrder = (q: LicenseSearch): string =>
  orderBy(LICENSE_SORT, q.sort ?? 'issued_at', q.order ?? 'desc', 'l.id')

export class LicenseLookup {
  constructor(private readonly db: LicensingDb) {}

  row(id: string): LicenseRow | undefined {
    return this.db.prepare('SELECT * FROM licenses WHERE id = ?').get(id) as LicenseRow | undefined
  }

  /** The row, or not_found. */
  must(id: string): LicenseRow {
    const r = this.row(id)
    if (!r) throw new ApiError('not_found', `no license ${id}`)
    return r
  }

  view(id: string): LicenseView {
    return licenseView(this.db, id)
  }

  search(q: LicenseSearch & Pick<LicenseQuery, 'limit' | 'offset'>): { total: number; licenses: LicenseView[] } {
    const { where, args } = licenseFilter(q)
    const total = (
      this.db
        .prepare(`SELECT count(*) AS n FROM licenses l JOIN products p ON p.id = l.product_id ${where}`)
        .get(...args) as { n: number }
    ).n
    const rows = this.db
      .prepare(`${VIEW_SELECT} ${where} ${licenseOrder(q)} LIMIT ? OFFSET ?`)
      .all(...args, q.limit, q.offset) as ViewRow[]
    return { total, licenses: rows.map(toView) }
  }

  /** Every license matching a filter, in its sort order, read lazily (CSV export). */
  *matching(q: LicenseSearch, max: number): Generator<LicenseView> {
    const { where, args } = licenseFilter(q)
    const stmt = this.db.prepare(`${VIEW_SELECT} ${where} ${licenseOrder(q)} LIMIT ?`)
    for (const r of stmt.iterate(...args, max) as Iterable<ViewRow>) yield toView(r)
  }

  detail(id: string): { license: LicenseView; machines: MachineView[] } {
    return { license: this.view(id), machines: this.machines({ license_id: id, include_inactive: true, limit: 5000 }) }
  }

  machines(q: MachineQuery): MachineView[] {
    const { where, args } = whereAll([
      equals('m.license_id', q.license_id || undefined),
      !q.include_inactive && { sql: `m.status = 'active'`, args: [] },
      matchAny(['m.id', 'm.license_id', 'm.hostname', 'm.platform', 'm.last_ip', 'p.slug', 'p.name'], q.q),
    ])
    const order = orderBy(MACHINE_SORT, q.sort ?? 'last_heartbeat_at', q.order ?? 'desc', 'm.id')
    return this.db
      .prepare(`${MACHINE_SELECT} ${where} ${order} LIMIT ? OFFSET ?`)
      .all(...args, q.limit, q.offset ?? 0) as MachineView[]
  }
}
