/**
 * Licenses and the machines bound to them, one service per use case (as Keygen's API splits
 * them): issuing, the admin's lookup and status changes, machine seats, validation, recovery and
 * free-license redemption. Each takes what it needs; this file only builds them together.
 */
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import type { AuditLog } from './audit'
import type { LicensingDb } from './db'
import type { Discounts } from './discounts'
import { FreeLicenseRedeem } from './freeLicenseRedeem'
import { GatewayAccess } from './gatewayAccess'
import type { Issuer } from './keys/issuer'
import type { AccessKeys, LicenseStanding } from '../platform/accessKeys'
import { AccessQuotas } from './accessQuotas'
import { AccessReport } from './accessReport'
import { LicenseIssuing } from './licenseIssuing'
import { LicenseKeys } from './licenseKeys'
import { LicenseLookup } from './licenseLookup'
import { licenseStanding } from './licenseStanding'
import { LicenseStatus } from './licenseStatus'
import { LicenseValidation } from './licenseValidation'
import { MachineSeats } from './machineSeats'
import { dbOutbox } from './outboundEvents'
import type { Catalog } from './productCatalog'
import { LicenseRecovery } from './recovery'
import type { EventOutbox } from './settlement'
import type { ValidationRecorder } from './validationLog'

export type { ClientInfo, LicenseRow } from './licenseRecords'
export type { LicenseSearch, MachineQuery } from './licenseLookup'

export interface LicenseDeps {
  db: LicensingDb
  clock: Clock
  audit: AuditLog
  catalog: Catalog
  discounts: Discounts
  issuer: Issuer
  /** Where lifecycle events go; defaults to the outbox table of `db`. */
  outbox?: EventOutbox
  /** Where every validate, activate, heartbeat and deactivate is reported (the validation log). */
  validations?: ValidationRecorder
  /** Heartbeats allowed per license per minute (a burst of as many, then one per 60/n seconds). */
  heartbeatsPerMinute?: number
  /** Issues the buyer's gateway key for a tier that sells access to the cluster. */
  accessKeys?: AccessKeys
  /** Where a gateway key that could not be issued is reported (beside the audit log). */
  logger?: Logger
}

/** The license use cases, built over one database. */
export interface Licenses {
  /** Key authentication for the buyer endpoints. */
  readonly keys: LicenseKeys
  readonly issuing: LicenseIssuing
  /** The admin's search, export and detail. */
  readonly lookup: LicenseLookup
  /** Revoke, suspend, reinstate. */
  readonly status: LicenseStatus
  /** Activate, heartbeat, deactivate (buyer and admin). */
  readonly machines: MachineSeats
  readonly validation: LicenseValidation
  readonly recovery: LicenseRecovery
  readonly redemption: FreeLicenseRedeem
  /** Whether a license's gateway key may be used, and within what (the gateway asks on each request). */
  readonly standing: LicenseStanding
  /** An access license's tokens this period and its top-ups. */
  readonly quotas: AccessQuotas
  /** The operator's view of the access licenses this period (and /metrics by tier). */
  readonly report: AccessReport
  /** The buyer's gateway key: issued after a sale, shown once, recovered, following its tier. */
  readonly access: GatewayAccess
}

export function createLicenses(deps: LicenseDeps): Licenses {
  const { db, clock, audit, catalog, discounts, issuer } = deps
  const outbox = deps.outbox ?? dbOutbox(db)
  const keys = new LicenseKeys({ db, issuer, validations: deps.validations })
  const access = new GatewayAccess({
    db,
    clock,
    audit,
    catalog,
    keys,
    logger: deps.logger,
    accessKeys: deps.accessKeys,
  })
  const issuing = new LicenseIssuing({ db, clock, audit, catalog, issuer, outbox, access })
  const lookup = new LicenseLookup(db)
  const machines = new MachineSeats({
    db,
    clock,
    audit,
    outbox,
    keys,
    heartbeatsPerMinute: deps.heartbeatsPerMinute,
  })
  const standing = licenseStanding(db, clock)
  const quotas = new AccessQuotas({ db, clock, audit, standing, accessKeys: deps.accessKeys })
  return {
    keys,
    issuing,
    lookup,
    status: new LicenseStatus({ db, clock, audit, outbox, lookup }),
    machines,
    validation: new LicenseValidation({ db, clock, issuer, keys, seats: machines, quotas }),
    recovery: new LicenseRecovery({ db, clock, audit, catalog, keys, issuing, quotas }),
    redemption: new FreeLicenseRedeem({ db, clock, audit, catalog, discounts, issuing, access }),
    standing,
    quotas,
    report: new AccessReport({ db, clock, accessKeys: deps.accessKeys }),
    access,
  }
}
