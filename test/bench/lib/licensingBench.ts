import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

/**
 * A licensing database for the in-process licensing benches: the real services in a temp
 * DATA_DIR with one product and one unlimited policy, their rows ready for `licenses.issue`.
 * Modules are imported dynamically, as the benches do (tsx reads their CommonJS re-exports so).
 */
export async function licensingBench(prefix: string) {
  const { loadConfig } = await import('../../../src-main/config/load')
  const { PolicyInput, ProductInput } = await import('../../../src-main/contract/licensing')
  const { systemClock } = await import('../../../src-main/lib/clock')
  const { createLogger, MemorySink } = await import('../../../src-main/lib/logger')
  const { createLicensingServices } = await import('../../../src-main/licensing/licensingServices')
  const { testCoreDeps } = await import('../../helpers/coreDeps')
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  const logger = createLogger({ sink: new MemorySink() })
  const config = loadConfig({ env: { DATA_DIR: dataDir, RATE_SOURCES: 'http://127.0.0.1:9' } })
  const s = createLicensingServices(testCoreDeps({ config, clock: systemClock, logger }))
  const p = s.catalog.createProduct(ProductInput.parse({ slug: 'bench', name: 'Bench', price_value: 1 }))
  const pol = s.catalog.createPolicy(p.id, PolicyInput.parse({ slug: 't', name: 'T', max_machines: 0 }))
  const product = s.catalog.productRow(p.id)
  const policy = s.catalog.policyRow(pol.id)
  if (!product || !policy) throw new Error('the bench product or policy was not created')
  return { dataDir, logger, config, s, product, policy }
}
