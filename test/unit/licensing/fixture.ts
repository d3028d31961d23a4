import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ManualClock } from '../../../src-main/lib/clock'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { Analytics } from '../../../src-main/licensing/analytics'
import { AuditLog } from '../../../src-main/licensing/audit'
import { Catalog } from '../../../src-main/licensing/productCatalog'
import { openLicensingDb } from '../../../src-main/licensing/db'
import { Discounts } from '../../../src-main/licensing/discounts'
import { Issuer } from '../../../src-main/licensing/keys/issuer'
import { createLicenses } from '../../../src-main/licensing/licenses'
import { Pricing } from '../../../src-main/licensing/pricing'
import { RateService } from '../../../src-main/licensing/rates'

/** The licensing services on a temp database and key dir, a manual clock, and rate sources at `rateUrls`. */
export function licensingFixture(rateUrls: string[] = []) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lic-svc-'))
  const clock = new ManualClock(Date.UTC(2026, 0, 15, 12))
  const logs = new MemorySink()
  const logger = createLogger({ sink: logs })
  const db = openLicensingDb(path.join(dir, 'licensing.sqlite'))
  const audit = new AuditLog(db, clock)
  const issuer = Issuer.loadOrCreate(path.join(dir, 'keys'), logger)
  const catalog = new Catalog(db, clock, audit)
  const discounts = new Discounts(db, clock, audit)
  const rates = new RateService({ baseUrls: rateUrls, clock, logger, timeoutMs: 2000 })
  const pricing = new Pricing(catalog, discounts, rates)
  const licenses = createLicenses({ db, clock, audit, catalog, discounts, issuer })
  const analytics = new Analytics(db, clock)
  return { dir, clock, logs, db, audit, issuer, catalog, discounts, rates, pricing, licenses, analytics }
}

export const DAY = 86_400_000
