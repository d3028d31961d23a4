import path from 'node:path'
import type { Router } from 'express'
import { licensingContract } from '../contract/licensing'
import type { Handlers, MethodDef } from '../contract/define'
import { ApiError } from '../contract/errors'
import type { ComponentHealth } from '../contract/system'
import type { CoreDeps, DomainModule } from '../platform/domainModule'
import { sendError } from '../http/respond'
import { surfaceOf } from '../http/surfaces'
import { LicensingDbError } from './db'
import { LicensingDbDamaged } from './dbCheck'

/** Why licensing is off, in words for an open endpoint (no paths) and for the admin (with them). */
export interface LicensingOutage {
  readonly health: ComponentHealth
  /** For the admin: the same with the database's full path. */
  readonly adminMessage: string
}

/** The outage of a damaged or emptied database: the reason, and the newest backup to restore (or what to do without one). */
function damagedOutage(err: LicensingDbDamaged, dbFile: string): LicensingOutage {
  const name = path.basename(dbFile)
  const reason = `the licensing database ${err.message}`
  const untouched = `Tandem does not write to the damaged ${name}.`
  const remedy = (file: string, backup: string | null): string =>
    backup
      ? `Restore from the newest backup: stop Tandem, copy ${backup} over ${file}, remove ${name}-wal and ${name}-shm, ` +
        `then start Tandem. ${untouched}`
      : `There is no backup in the backups folder of the data directory: restore ${file} from a backup of your own, ` +
        `or move it aside (together with ${name}-wal and ${name}-shm if present) to start with an empty licensing ` +
        `database; then restart Tandem. ${untouched}`
  const short = err.backup ? `backups/${path.basename(err.backup)}` : null
  return {
    health: { state: 'degraded', reason, remedy: remedy(`${name} in the data directory`, short) },
    adminMessage: `Licensing is off: ${reason}. ${remedy(dbFile, err.backup)}`,
  }
}

export function describeOutage(err: unknown, dbFile: string): LicensingOutage {
  const name = path.basename(dbFile)
  if (err instanceof LicensingDbDamaged) return damagedOutage(err, dbFile)
  if (err instanceof LicensingDbError) {
    const reason = `the licensing database ${err.message.split(dbFile).join(name)}`
    const remedy = (file: string): string =>
      `Restore ${file} from a backup, or move it aside (together with ${name}-wal and ${name}-shm if present) ` +
      'to start with an empty licensing database; then restart Tandem.'
    return {
      health: { state: 'degraded', reason, remedy: remedy(`${name} in the data directory`) },
      adminMessage: `Licensing is off: ${reason}. ${remedy(dbFile)}`,
    }
  }
  const detail = err instanceof Error ? err.message : String(err)
  return {
    health: {
      state: 'degraded',
      reason: 'licensing could not start',
      remedy: 'The daemon log says why; fix the cause and restart Tandem. The licensing database was not changed.',
    },
    adminMessage: `Licensing is off: it could not start (${detail}). Fix the cause and restart Tandem; the licensing database was not changed.`,
  }
}

/**
 * Licensing when its database cannot be opened: every licensing method, webhook and page answers
 * 503 with the reason, while the rest of Tandem runs. The database file is left as it was.
 */
const publicError = (outage: LicensingOutage): ApiError =>
  new ApiError('unavailable', `licensing is unavailable: ${outage.health.reason}`)

/** The error a method answers while licensing is off: the admin's with paths, the public one without. */
function refusalOf(def: MethodDef, outage: LicensingOutage): ApiError {
  return def.http.includes(' /v1/admin/') ? new ApiError('unavailable', outage.adminMessage) : publicError(outage)
}

/**
 * The licensing handlers, each refusing while `outage()` says licensing is off (a damaged database
 * found while running) and calling through otherwise. `handlers` null: always refusing.
 */
export function guardedHandlers(
  handlers: Handlers<typeof licensingContract> | null,
  outage: () => LicensingOutage | null,
): Handlers<typeof licensingContract> {
  const open = handlers as Record<string, (...args: unknown[]) => unknown> | null
  const out: Record<string, unknown> = {}
  for (const [name, def] of Object.entries(licensingContract as Record<string, MethodDef>)) {
    const inner = open?.[name]
    const call = (args: unknown[]): unknown => {
      const o = outage()
      if (o) throw refusalOf(def, o)
      if (!inner) throw new ApiError('unavailable', 'licensing is unavailable')
      return inner(...args)
    }
    // A stream handler must fail when called, not return a rejected promise.
    out[name] = def.stream ? (...args: unknown[]) => call(args) : async (...args: unknown[]) => call(args)
  }
  // Every method of the table has its wrapper: the cast only restores the per-method types.
  return out as Handlers<typeof licensingContract>
}

/** Webhooks and pages answer 503 while licensing is off (contract routes are matched before this router). */
export function refuseRoutesWhileOff(router: Router, outage: () => LicensingOutage | null): void {
  router.use((req, res, next) => {
    const o = outage()
    const surface = surfaceOf(req.path)
    if (o && (surface === 'webhook' || surface === 'licensing-public'))
      return sendError(res, publicError(o), 'licensing')
    next()
  })
}

export function degradedLicensing(
  deps: CoreDeps,
  err: unknown,
): DomainModule<typeof licensingContract> & { health(): ComponentHealth } {
  const outage = describeOutage(err, deps.config.paths.licensingDb)
  deps.logger.child('licensing').error(outage.adminMessage, { error: err })
  return {
    name: 'licensing',
    handlers: guardedHandlers(null, () => outage),
    mountRoutes: (router: Router) => refuseRoutesWhileOff(router, () => outage),
    health: () => outage.health,
  }
}
