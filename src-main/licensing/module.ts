/**
 * Composition of the licensing domain: services (services.ts) → contract handlers (buyerApi.ts,
 * adminApi.ts, and the payments handlers) → HTTP-only routes (webhooks, pages) → workers.
 *
 * Part B wires the payments side in the marked section below: build their services from
 * `services`, spread their handlers into `handlers`, add their routes to mountRoutes and their
 * workers to start/stop.
 */
import type { Router } from 'express'
import type { licensingContract } from '../contract/licensing'
import type { CoreDeps, DomainModule } from '../core/module'
import { adminHandlers } from './adminApi'
import { buyerHandlers, buyerLimits } from './buyerApi'
import { createPayments } from './payments'
import { createLicensingServices } from './services'

export type LicensingModule = DomainModule<typeof licensingContract>

export async function createLicensingModule(deps: CoreDeps): Promise<LicensingModule> {
  const services = createLicensingServices(deps)
  const limits = buyerLimits(services)
  const buyer = buyerHandlers(services, limits)
  const admin = adminHandlers(services)

  // ---- payments (part B): purchase, invoices, providers, settlement, webhooks, pages, workers ----
  const payments = createPayments(services, { limits })

  return {
    name: 'licensing',
    handlers: { ...buyer, ...admin, ...payments.handlers },
    mountRoutes(router: Router) {
      payments.mountRoutes(router)
    },
    start() {
      payments.start()
    },
    async stop() {
      await payments.stop()
      services.close()
    },
  }
}
