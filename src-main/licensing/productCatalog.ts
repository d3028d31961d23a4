/**
 * Products and their policies (tiers). A product lists a price in SAT, USD, EUR or BTC; a policy
 * may override the value and the currency (NULL inherits the product's), and carries the
 * entitlements, machine limit, duration, grace and trial days and recurring settings that a
 * license copies when issued. `price_sats` / `price_sats_override` are the legacy sats prices,
 * kept equal to the value for SAT and BTC prices and 0 / NULL for fiat ones.
 * Errors are ApiError (not_found 404, conflict 409, bad_input 400).
 */
import { randomUUID } from 'node:crypto'
import {
  type Currency,
  type PolicyInput,
  type PolicyPatch,
  type PolicyView,
  type ProductInput,
  type ProductPatch,
  type ProductQuery,
  type ProductView,
  type TierPriceEffect,
} from '../contract/licensing'
import { ApiError } from '../contract/errors'
import type { Clock } from '../lib/clock'
import type { AuditLog } from './audit'
import { orderBy, searchAny, type LicensingDb } from './db'
import {
  checkPolicy,
  effectivePrice,
  flag,
  isSatsCurrency,
  isUniqueViolation,
  overrideSats,
  patchedPolicy,
  policyView,
  productView,
  type PolicyRow,
  type ProductRow,
} from './catalogRows'

export { effectivePrice, isSatsCurrency, policyView, productView } from './catalogRows'
export type { PolicyRow, ProductRow } from './catalogRows'

/** Best tier first; policies outside the ladder last, by name. */
const PRODUCT_SORT: Record<ProductQuery['sort'], string> = {
  created_at: 'created_at',
  updated_at: 'updated_at',
  name: 'name COLLATE NOCASE',
  slug: 'slug',
}

const POLICY_ORDER = 'ORDER BY tier_rank IS NULL, tier_rank DESC, name'

export class Catalog {
  constructor(
    private readonly db: LicensingDb,
    private readonly clock: Clock,
    private readonly audit: AuditLog,
    /** Called after a tier was created, changed or deleted (the access sales record reads again). */
    private readonly tiersChanged: () => void = () => undefined,
  ) {}

  // ---- rows ----

  productRow(id: string): ProductRow | undefined {
    return this.db.prepare('SELECT * FROM products WHERE id = ?').get(id) as ProductRow | undefined
  }

  productBySlug(slug: string): ProductRow | undefined {
    return this.db.prepare('SELECT * FROM products WHERE slug = ?').get(slug) as ProductRow | undefined
  }

  policyRow(id: string): PolicyRow | undefined {
    return this.db.prepare('SELECT * FROM policies WHERE id = ?').get(id) as PolicyRow | undefined
  }

  policyBySlug(productId: string, slug: string): PolicyRow | undefined {
    return this.db.prepare('SELECT * FROM policies WHERE product_id = ? AND slug = ?').get(productId, slug) as
      PolicyRow | undefined
  }

  policyRows(productId: string): PolicyRow[] {
    return this.db.prepare(`SELECT * FROM policies WHERE product_id = ? ${POLICY_ORDER}`).all(productId) as PolicyRow[]
  }

  private mustProduct(id: string): ProductRow {
    const p = this.productRow(id)
    if (!p) throw new ApiError('not_found', `no product ${id}`)
    return p
  }

  private mustPolicy(id: string): PolicyRow {
    const p = this.policyRow(id)
    if (!p) throw new ApiError('not_found', `no policy ${id}`)
    return p
  }

  /**
   * The tier a buyer gets: the named active policy, else the one slugged `default`, else the
   * lowest-ranked active public one. Throws not_found for an unknown or inactive slug.
   */
  resolvePolicy(product: ProductRow, slug?: string | null): PolicyRow {
    if (slug) {
      const p = this.policyBySlug(product.id, slug)
      if (!p || !flag(p.active)) throw new ApiError('not_found', `product ${product.slug} has no tier ${slug}`)
      return p
    }
    const active = this.policyRows(product.id).filter((p) => flag(p.active))
    const chosen =
      active.find((p) => p.slug === 'default') ??
      [...active.filter((p) => flag(p.public))].sort((x, y) => (x.tier_rank ?? 0) - (y.tier_rank ?? 0))[0] ??
      active[0]
    if (!chosen) throw new ApiError('conflict', `product ${product.slug} has no active tier`)
    return chosen
  }

  // ---- products ----

  /** One page of products matching the search, and how many match. */
  products(q: ProductQuery): { total: number; products: ProductView[] } {
    const { where, args } = searchAny(['name', 'slug'], q.q)
    const total = (this.db.prepare(`SELECT count(*) AS n FROM products ${where}`).get(...args) as { n: number }).n
    const rows = this.db
      .prepare(`SELECT * FROM products ${where} ${orderBy(PRODUCT_SORT, q.sort, q.order, 'id')} LIMIT ? OFFSET ?`)
      .all(...args, q.limit, q.offset) as ProductRow[]
    return { total, products: rows.map(productView) }
  }

  getProduct(id: string): { product: ProductView; policies: PolicyView[] } {
    const p = this.mustProduct(id)
    return { product: productView(p), policies: this.policyRows(id).map((r) => policyView(r, p)) }
  }

  /** Creates the product and a `default` tier (perpetual, one machine) so it can be sold at once. */
  createProduct(input: Omit<ProductInput, 'return_url_prefix'> & { return_url_prefix?: string | null }): ProductView {
    const now = this.clock.now()
    const id = randomUUID()
    const sats = isSatsCurrency(input.price_currency) ? input.price_value : 0
    try {
      this.db.transaction(() => {
        this.db
          .prepare(
            `INSERT INTO products (id, slug, name, description, price_sats, price_currency, price_value, entitlements_catalog, active, return_url_prefix, created_at, updated_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          )
          .run(
            id,
            input.slug,
            input.name,
            input.description,
            sats,
            input.price_currency,
            input.price_value,
            JSON.stringify(input.entitlements_catalog),
            input.active ? 1 : 0,
            input.return_url_prefix ?? null,
            now,
            now,
          )
        this.db
          .prepare(
            `INSERT INTO policies (id, product_id, slug, name, created_at, updated_at) VALUES (?, ?, 'default', 'Standard', ?, ?)`,
          )
          .run(randomUUID(), id, now, now)
        this.audit.record({
          actor: 'admin',
          action: 'product.create',
          targetType: 'product',
          targetId: id,
          details: { slug: input.slug },
        })
      })()
    } catch (err) {
      if (isUniqueViolation(err)) throw new ApiError('conflict', `a product with slug ${input.slug} exists`)
      throw err
    }
    return productView(this.mustProduct(id))
  }

  updateProduct(id: string, patch: ProductPatch): ProductView {
    const cur = this.mustProduct(id)
    const next = {
      slug: patch.slug ?? cur.slug,
      name: patch.name ?? cur.name,
      description: patch.description ?? cur.description,
      price_currency: patch.price_currency ?? cur.price_currency,
      price_value: patch.price_value ?? cur.price_value,
      entitlements_catalog:
        patch.entitlements_catalog !== undefined
          ? JSON.stringify(patch.entitlements_catalog)
          : cur.entitlements_catalog,
      active: patch.active !== undefined ? (patch.active ? 1 : 0) : cur.active,
      return_url_prefix: patch.return_url_prefix !== undefined ? patch.return_url_prefix : cur.return_url_prefix,
    }
    const sats = isSatsCurrency(next.price_currency) ? next.price_value : 0
    try {
      this.db.transaction(() => {
        this.db
          .prepare(
            `UPDATE products SET slug = ?, name = ?, description = ?, price_currency = ?, price_value = ?, price_sats = ?,
             entitlements_catalog = ?, active = ?, return_url_prefix = ?, updated_at = ? WHERE id = ?`,
          )
          .run(
            next.slug,
            next.name,
            next.description,
            next.price_currency,
            next.price_value,
            sats,
            next.entitlements_catalog,
            next.active,
            next.return_url_prefix ?? null,
            this.clock.now(),
            id,
          )
        const pinned = pinOverrides(this.db, this.clock.now(), cur, next.price_currency)
        this.syncPolicySats(id)
        this.audit.record({
          actor: 'admin',
          action: 'product.update',
          targetType: 'product',
          targetId: id,
          details: { changed: Object.keys(patch), ...(pinned.length > 0 ? { pinned_tiers: pinned } : {}) },
        })
      })()
    } catch (err) {
      if (isUniqueViolation(err)) throw new ApiError('conflict', `a product with slug ${next.slug} exists`)
      throw err
    }
    return productView(this.mustProduct(id))
  }

  deleteProduct(id: string): void {
    const p = this.mustProduct(id)
    const used = this.db
      .prepare(
        'SELECT (SELECT count(*) FROM licenses WHERE product_id = ?) + (SELECT count(*) FROM invoices WHERE product_id = ?) AS n',
      )
      .get(id, id) as { n: number }
    if (used.n > 0) throw new ApiError('conflict', `product ${p.slug} has licenses or invoices; deactivate it instead`)
    this.db.transaction(() => {
      this.db
        .prepare(
          'UPDATE discount_codes SET policy_id = NULL WHERE policy_id IN (SELECT id FROM policies WHERE product_id = ?)',
        )
        .run(id)
      this.db
        .prepare(
          'DELETE FROM discount_codes WHERE product_id = ? AND id NOT IN (SELECT discount_code_id FROM discount_redemptions)',
        )
        .run(id)
      const stillScoped = this.db.prepare('SELECT count(*) AS n FROM discount_codes WHERE product_id = ?').get(id) as {
        n: number
      }
      if (stillScoped.n > 0)
        throw new ApiError('conflict', `product ${p.slug} has used discount codes; deactivate it instead`)
      this.db.prepare('DELETE FROM policies WHERE product_id = ?').run(id)
      this.db.prepare('DELETE FROM products WHERE id = ?').run(id)
      this.audit.record({
        actor: 'admin',
        action: 'product.delete',
        targetType: 'product',
        targetId: id,
        details: { slug: p.slug },
      })
    })()
    this.tiersChanged()
  }

  // ---- policies ----

  listPolicies(productId: string): PolicyView[] {
    const p = this.mustProduct(productId)
    return this.policyRows(productId).map((r) => policyView(r, p))
  }

  getPolicy(id: string): PolicyView {
    const r = this.mustPolicy(id)
    return policyView(r, this.mustProduct(r.product_id))
  }

  createPolicy(productId: string, input: PolicyInput): PolicyView {
    const product = this.mustProduct(productId)
    checkPolicy(product, input)
    const now = this.clock.now()
    const id = randomUUID()
    try {
      this.db
        .prepare(INSERT_POLICY)
        .run(
          id,
          productId,
          input.slug,
          input.name,
          input.description,
          input.tier_rank,
          input.price_currency_override,
          input.price_value_override,
          overrideSats(product, input),
          JSON.stringify(input.entitlements),
          input.max_machines,
          input.duration_days,
          input.grace_period_days,
          +input.is_trial,
          input.trial_days,
          +input.is_recurring,
          input.renewal_period_days,
          +input.highlighted,
          +input.public,
          +input.active,
          accessText(input),
          now,
          now,
        )
    } catch (err) {
      if (isUniqueViolation(err))
        throw new ApiError('conflict', `product ${product.slug} already has a tier ${input.slug}`)
      throw err
    }
    this.audit.record({
      actor: 'admin',
      action: 'policy.create',
      targetType: 'policy',
      targetId: id,
      details: { product: product.slug, slug: input.slug },
    })
    this.tiersChanged()
    return this.getPolicy(id)
  }

  updatePolicy(id: string, patch: PolicyPatch): PolicyView {
    const cur = this.mustPolicy(id)
    const product = this.mustProduct(cur.product_id)
    const next = patchedPolicy(cur, policyView(cur, product), patch)
    checkPolicy(product, next)
    try {
      this.db
        .prepare(
          `UPDATE policies SET slug = ?, name = ?, description = ?, tier_rank = ?, price_currency_override = ?, price_value_override = ?,
             price_sats_override = ?, entitlements = ?, max_machines = ?, duration_days = ?, grace_period_days = ?, is_trial = ?,
             trial_days = ?, is_recurring = ?, renewal_period_days = ?, highlighted = ?, public = ?, active = ?, access = ?, updated_at = ?
           WHERE id = ?`,
        )
        .run(
          next.slug,
          next.name,
          next.description,
          next.tier_rank,
          next.price_currency_override,
          next.price_value_override,
          overrideSats(product, next),
          JSON.stringify(next.entitlements),
          next.max_machines,
          next.duration_days,
          next.grace_period_days,
          +next.is_trial,
          next.trial_days,
          +next.is_recurring,
          next.renewal_period_days,
          +next.highlighted,
          +next.public,
          +next.active,
          accessText(next),
          this.clock.now(),
          id,
        )
    } catch (err) {
      if (isUniqueViolation(err))
        throw new ApiError('conflict', `product ${product.slug} already has a tier ${next.slug}`)
      throw err
    }
    this.audit.record({
      actor: 'admin',
      action: 'policy.update',
      targetType: 'policy',
      targetId: id,
      details: { changed: Object.keys(patch) },
    })
    this.tiersChanged()
    return this.getPolicy(id)
  }

  deletePolicy(id: string): void {
    const cur = this.mustPolicy(id)
    const used = this.db
      .prepare(
        `SELECT (SELECT count(*) FROM licenses WHERE policy_id = ?) + (SELECT count(*) FROM invoices WHERE policy_id = ?)
              + (SELECT count(*) FROM discount_codes WHERE policy_id = ?) AS n`,
      )
      .get(id, id, id) as { n: number }
    if (used.n > 0)
      throw new ApiError(
        'conflict',
        `tier ${cur.slug} is used by licenses, invoices or discount codes; deactivate it instead`,
      )
    this.db.prepare('DELETE FROM policies WHERE id = ?').run(id)
    this.audit.record({
      actor: 'admin',
      action: 'policy.delete',
      targetType: 'policy',
      targetId: id,
      details: { slug: cur.slug },
    })
    this.tiersChanged()
  }

  /**
   * What a product change would do to its tiers' prices, before it is saved: a currency change
   * pins every tier that prices its own value in the inherited currency (it keeps its currency and
   * value); tiers inheriting the product's price follow the new price.
   */
  previewProductChange(id: string, patch: Pick<ProductPatch, 'price_currency' | 'price_value'>): TierPriceEffect[] {
    const cur = this.mustProduct(id)
    const currency = patch.price_currency ?? cur.price_currency
    const value = patch.price_value ?? cur.price_value
    return this.policyRows(id).map((r) => {
      const before = effectivePrice(cur, r)
      const pin =
        currency !== cur.price_currency && r.price_currency_override === null && r.price_value_override !== null
      const after = pin
        ? before
        : { currency: r.price_currency_override ?? currency, value: r.price_value_override ?? value }
      return {
        policy_id: r.id,
        slug: r.slug,
        name: r.name,
        before,
        after,
        pinned: pin,
        changed: before.currency !== after.currency || before.value !== after.value,
      }
    })
  }

  private syncPolicySats(productId: string): void {
    const product = this.mustProduct(productId)
    const set = this.db.prepare('UPDATE policies SET price_sats_override = ? WHERE id = ?')
    for (const r of this.policyRows(productId)) set.run(overrideSats(product, r), r.id)
  }
}

/**
 * On a currency change, tiers whose value override inherited the old currency get that currency
 * pinned, so a 5,000-sat tier stays 5,000 sats instead of becoming $50.00. Returns their slugs.
 */
function pinOverrides(db: LicensingDb, now: number, cur: ProductRow, nextCurrency: Currency): string[] {
  if (nextCurrency === cur.price_currency) return []
  const rows = db
    .prepare(
      `UPDATE policies SET price_currency_override = ?, updated_at = ?
       WHERE product_id = ? AND price_currency_override IS NULL AND price_value_override IS NOT NULL RETURNING slug`,
    )
    .all(cur.price_currency, now, cur.id) as { slug: string }[]
  return rows.map((r) => r.slug)
}

const INSERT_POLICY = `INSERT INTO policies (id, product_id, slug, name, description, tier_rank, price_currency_override,
    price_value_override, price_sats_override, entitlements, max_machines, duration_days, grace_period_days, is_trial,
    trial_days, is_recurring, renewal_period_days, highlighted, public, active, access, created_at, updated_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

/** A tier's access entitlements as stored: JSON, or NULL for none. */
function accessText(p: PolicyInput): string | null {
  return p.access === null ? null : JSON.stringify(p.access)
}
