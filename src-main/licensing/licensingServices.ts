/**
 * The licensing services built once from CoreDeps: database (migrated), audit log, issuer key,
 * catalog, discounts, rates, pricing, licenses, analytics. module.ts wires them to the contract,
 * and the payment services are built from the same object.
 */
import type { AccessKeys } from '../platform/accessKeys'
import type { CoreDeps } from '../platform/domainModule'
import { AccessSalesRecord } from './accessSales'
import { Analytics } from './analytics'
import { AuditLog } from './audit'
import { Catalog } from './productCatalog'
import { newestBackup } from './backups'
import { openLicensingDb, type LicensingDb } from './db'
import { preflightLicensingDb } from './dbCheck'
import { Discounts } from './discounts'
import { Issuer } from './keys/issuer'
import { createLicenses, type Licenses } from './licenses'
import { Pricing } from './pricing'
import { RateService } from './rates'
import { ValidationLog } from './validationLog'

export interface LicensingServices {
  readonly deps: CoreDeps
  readonly db: LicensingDb
  readonly audit: AuditLog
  readonly issuer: Issuer
  readonly catalog: Catalog
  readonly discounts: Discounts
  readonly rates: RateService
  readonly pricing: Pricing
  readonly licenses: Licenses
  readonly analytics: Analytics
  readonly validationLog: ValidationLog
  /** Whether any tier sells access, for the gateway (issue 45). */
  readonly accessSales: AccessSalesRecord
  close(): void
}

export function createLicensingServices(
  deps: CoreDeps & { accessKeys?: AccessKeys },
  opts: { fetch?: ConstructorParameters<typeof RateService>[0]['fetch'] } = {},
): LicensingServices {
  const { config, clock } = deps
  const logger = deps.logger.child('licensing')
  // A damaged or emptied database throws here (LicensingDbDamaged) and is never opened for writing.
  preflightLicensingDb(config.paths.licensingDb, {
    newestBackup: () => newestBackup(config.paths.licensingBackupDir),
    logger,
  })
  const db = openLicensingDb(config.paths.licensingDb, { now: () => clock.now() })
  const callers = deps.callers
  const audit = new AuditLog(db, clock, callers ? () => callers.current() : undefined)
  const issuer = Issuer.loadOrCreate(config.paths.licensingKeyDir, logger)
  const accessSales = new AccessSalesRecord(db)
  const catalog = new Catalog(db, clock, audit, () => accessSales.refresh())
  const discounts = new Discounts(db, clock, audit, undefined, config.discountReservationMs)
  const rates = new RateService({
    baseUrls: config.rateSources,
    clock,
    logger: logger.child('rates'),
    fetch: opts.fetch,
  })
  const pricing = new Pricing(catalog, discounts, rates)
  const validationLog = new ValidationLog({
    db,
    clock,
    logger: logger.child('validation-log'),
    retentionDays: config.validationLog.retentionDays,
    maxRows: config.validationLog.maxRows,
    dataDir: config.paths.dataDir,
  })
  const licenses = createLicenses({
    db,
    clock,
    audit,
    catalog,
    discounts,
    issuer,
    validations: validationLog,
    accessKeys: deps.accessKeys,
    logger: logger.child('licenses'),
  })
  const analytics = new Analytics(db, clock)
  return {
    deps: { ...deps, logger },
    db,
    audit,
    issuer,
    catalog,
    discounts,
    rates,
    pricing,
    licenses,
    analytics,
    validationLog,
    accessSales,
    close: () => {
      validationLog.close()
      db.close()
    },
  }
}
