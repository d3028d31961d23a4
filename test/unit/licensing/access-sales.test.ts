import { describe, expect, it } from 'vitest'
import { PolicyInput, PolicyPatch, ProductInput } from '../../../src-main/contract/licensing'
import { AccessSalesRecord } from '../../../src-main/licensing/accessSales'
import { Catalog } from '../../../src-main/licensing/productCatalog'
import { licensingFixture } from './fixture'

/** Issue 45: whether any tier sells access, answered from memory and read again on every tier change. */
function setup() {
  const f = licensingFixture()
  const sales = new AccessSalesRecord(f.db)
  const catalog = new Catalog(f.db, f.clock, f.audit, () => sales.refresh())
  const product = catalog.createProduct(ProductInput.parse({ slug: 'cluster', name: 'Cluster', price_value: 1000 }))
  return { f, sales, catalog, productId: product.id }
}

const tier = (slug: string, access?: object) => PolicyInput.parse({ slug, name: slug, access })

describe('whether the shop sells access', () => {
  it('follows tiers as they are created, changed, archived and deleted', () => {
    const { sales, catalog, productId } = setup()
    expect(sales.sellsAccess()).toBe(false)
    const plain = catalog.createPolicy(productId, tier('plain'))
    expect(sales.sellsAccess()).toBe(false)
    const sold = catalog.createPolicy(productId, tier('gpu', { requests_per_minute: 10 }))
    expect(sales.sellsAccess()).toBe(true)
    // Archived, its licenses keep their keys: still selling.
    catalog.updatePolicy(sold.id, PolicyPatch.parse({ active: false }))
    expect(sales.sellsAccess()).toBe(true)
    catalog.updatePolicy(sold.id, PolicyPatch.parse({ access: null }))
    expect(sales.sellsAccess()).toBe(false)
    catalog.updatePolicy(plain.id, PolicyPatch.parse({ access: {} }))
    expect(sales.sellsAccess()).toBe(true)
    catalog.deletePolicy(plain.id)
    expect(sales.sellsAccess()).toBe(false)
    catalog.createPolicy(productId, tier('again', {}))
    expect(sales.sellsAccess()).toBe(true)
    catalog.deleteProduct(productId)
    expect(sales.sellsAccess()).toBe(false)
  })

  it('answers from memory, not with a query per call', () => {
    const { f, sales, catalog, productId } = setup()
    catalog.createPolicy(productId, tier('gpu', {}))
    // Behind the record's back: the answer stays until the next tier change reads again.
    f.db.prepare('UPDATE policies SET access = NULL').run()
    expect(sales.sellsAccess()).toBe(true)
    sales.refresh()
    expect(sales.sellsAccess()).toBe(false)
  })

  it('reads a malformed stored block as none, and a database it cannot read as selling', () => {
    const { f, sales, catalog, productId } = setup()
    const t = catalog.createPolicy(productId, tier('gpu', {}))
    f.db.prepare('UPDATE policies SET access = ? WHERE id = ?').run('{"models": 7}', t.id)
    sales.refresh()
    expect(sales.sellsAccess()).toBe(false)
    f.db.close()
    sales.refresh()
    expect(sales.sellsAccess()).toBe(true)
  })
})
