/**
 * Composition of the licensing domain: services (services.ts) → contract handlers (buyerApi.ts,
 * adminApi.ts, and the payments handlers) → HTTP-only routes (webhooks, pages) → workers.
 *
 * When the database cannot be opened (corrupt, emptied, unreadable, a failed migration: the start
 * checks in dbCheck.ts) licensing alone is off (degraded.ts): its routes answer 503 with the
 * reason and /api/health says so. The database watch (dbWatch.ts) checks it hourly while running
 * and takes the rolling backups (backups.ts); damage it finds turns licensing off the same way.
 */
import type { Router } from 'express'
import type { licensingContract } from '../contract/licensing'
import type { ComponentHealth } from '../contract/system'
import { ACCESS_SALES_UNKNOWN, type AccessKeys, type AccessSales, type LicenseStanding } from '../platform/accessKeys'
import type { CoreDeps, DomainModule } from '../platform/domainModule'
import type { AccessTierTotals } from './accessReport'
import { adminHandlers } from './adminApi'
import { LicensingBackups, newestBackup } from './backups'
import { buyerHandlers } from './buyerApi'
import type { LicensingDb } from './db'
import { closeWithoutCheckpoint } from './dbCheck'
import { LicensingDbWatch } from './dbWatch'
import {
  degradedLicensing,
  describeOutage,
  guardedHandlers,
  refuseRoutesWhileOff,
  type LicensingOutage,
} from './degraded'
import { createPayments } from './payments'
import { subscriptionHandlers } from './subscriptionHandlers'
import { tierChangeHandlers } from './tierChangeHandlers'
import { topUpHandlers } from './topUpSales'
import { createLicensingServices, type LicensingServices } from './licensingServices'
import { validationHandlers } from './validationHandlers'

export type LicensingModule = DomainModule<typeof licensingContract> & {
  health(): ComponentHealth
  /** The database, for metrics read at scrape time; absent while licensing is off. */
  database?(): LicensingDb
  /** The periodic check and backups; absent while licensing is off. */
  readonly dbWatch?: LicensingDbWatch
  /** Whether a license's gateway key may be used now; absent while licensing is off (keys then refuse). */
  readonly standing?: LicenseStanding
  /** Whether any tier sells access; absent while licensing is off (the gateway then acts as if one did). */
  readonly sales?: AccessSales
  /** The access licenses' current periods by tier, for metrics; absent while licensing is off. */
  accessByTier?(): AccessTierTotals[]
}

/** `accessKeys`: the gateway's side of a tier that sells access (issue 45). */
export async function createLicensingModule(deps: CoreDeps & { accessKeys?: AccessKeys }): Promise<LicensingModule> {
  let services: LicensingServices | null = null
  try {
    services = createLicensingServices(deps)
    return licensingModule(services)
  } catch (err) {
    services?.close()
    return degradedLicensing(deps, err)
  }
}

function licensingModule(services: LicensingServices): LicensingModule {
  const { config, clock, logger } = services.deps
  const buyer = buyerHandlers(services)
  const admin = adminHandlers(services)
  const payments = createPayments(services)
  const file = config.paths.licensingDb
  const backupDir = config.paths.licensingBackupDir
  // Set when the running database fails its periodic check: every route then refuses, as at start.
  let outage: LicensingOutage | null = null
  const standing = services.licenses.standing
  const dbWatch = new LicensingDbWatch({
    file,
    backups: new LicensingBackups({ db: services.db, dir: backupDir, keep: config.licensingBackups, clock, logger }),
    newestBackup: () => newestBackup(backupDir),
    clock,
    logger,
    onDamage: (err) => {
      outage = describeOutage(err, file)
      logger.error(outage.adminMessage)
      // Nothing more is written to the damaged file: the workers stop (the validation log writes what it holds).
      try {
        services.validationLog.close()
      } catch (e) {
        logger.error('closing the validation log failed', { error: e })
      }
      payments.stop().catch((e: unknown) => logger.error('stopping the payment workers failed', { error: e }))
    },
  })

  return {
    name: 'licensing',
    health: () => outage?.health ?? { state: 'ok', reason: null, remedy: null },
    database: () => services.db,
    dbWatch,
    standing: {
      check: (id) => (outage ? { refusal: 'cannot be checked now (licensing is off)' } : standing.check(id)),
    },
    sales: { sellsAccess: () => (outage ? ACCESS_SALES_UNKNOWN.sellsAccess() : services.accessSales.sellsAccess()) },
    accessByTier: () => (outage ? [] : services.licenses.report.byTier()),
    handlers: guardedHandlers(
      {
        ...buyer,
        ...admin,
        ...payments.handlers,
        ...subscriptionHandlers(payments.subscriptions, services.deps.clock),
        ...tierChangeHandlers(payments.tierChanges),
        ...topUpHandlers(payments.topUps),
        ...validationHandlers(services.validationLog),
      },
      () => outage,
    ),
    mountRoutes(router: Router) {
      refuseRoutesWhileOff(router, () => outage)
      payments.mountRoutes(router)
    },
    async start() {
      services.validationLog.start()
      payments.start()
      await dbWatch.start()
    },
    async stop() {
      await dbWatch.stop()
      await payments.stop()
      // A database found damaged keeps its WAL as it is for the restore, rather than having it checkpointed into the file.
      if (dbWatch.damaged) closeWithoutCheckpoint(file, () => services.close())
      else services.close()
    },
  }
}
