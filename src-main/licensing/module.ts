import type { licensingContract } from '../contract/licensing'
import type { CoreDeps, DomainModule } from '../core/module'

export type LicensingModule = DomainModule<typeof licensingContract>

/** Composition of the licensing database, keys, pricing, providers, workers and pages. */
export async function createLicensingModule(_deps: CoreDeps): Promise<LicensingModule> {
  return { name: 'licensing', handlers: {} }
}
