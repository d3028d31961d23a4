/**
 * Composition of the licensing domain: services (services.ts) → contract handlers (buyerApi.ts,
 * adminApi.ts, and the payments handlers) → HTTP-only routes (webhooks, pages) → workers.
 *
 * When the database cannot be opened (corrupt, unreadable, a failed migration) licensing alone is
 * off (degraded.ts): its routes answer 503 with the reason and /api/health says so.
 */
import type { Router } from 'express'
import type { licensingContract } from '../contract/licensing'
import type { ComponentHealth } from '../contract/system'
import type { CoreDeps, DomainModule } from '../core/module'
import { adminHandlers } from './adminApi'
import { buyerHandlers } from './buyerApi'
import type { LicensingDb } from './db'
import { degradedLicensing } from './degraded'
import { createPayments } from './payments'
import { subscriptionHandlers } from './subscriptionHandlers'
import { tierChangeHandlers } from './tierChangeHandlers'
import { createLicensingServices, type LicensingServices } from './services'
import { validationHandlers } from './validationHandlers'

export type LicensingModule = DomainModule<typeof licensingContract> & {
  health(): ComponentHealth
  /** The database, for metrics read at scrape time; absent while licensing is off. */
  database?(): LicensingDb
}

export async function createLicensingModule(deps: CoreDeps): Promise<LicensingModule> {
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
  const buyer = buyerHandlers(services)
  const admin = adminHandlers(services)
  const payments = createPayments(services)

  return {
    name: 'licensing',
    health: () => ({ state: 'ok', reason: null, remedy: null }),
    database: () => services.db,
    handlers: {
      ...buyer,
      ...admin,
      ...payments.handlers,
      ...subscriptionHandlers(payments.subscriptions, services.deps.clock),
      ...tierChangeHandlers(payments.tierChanges),
      ...validationHandlers(services.validationLog),
    },
    mountRoutes(router: Router) {
      payments.mountRoutes(router)
    },
    start() {
      services.validationLog.start()
      payments.start()
    },
    async stop() {
      await payments.stop()
      services.close()
    },
  }
}
