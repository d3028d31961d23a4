import path from 'node:path'
import type { Router } from 'express'
import { licensingContract } from '../contract/licensing'
import type { Handlers, MethodDef } from '../contract/define'
import { ApiError } from '../contract/errors'
import type { ComponentHealth } from '../contract/system'
import type { CoreDeps, DomainModule } from '../core/module'
import { sendError } from '../http/respond'
import { surfaceOf } from '../http/surfaces'
import { LicensingDbError } from './db'

/** Why licensing is off, in words for an open endpoint (no paths) and for the admin (with them). */
export interface LicensingOutage {
  readonly health: ComponentHealth
  /** For the admin: the same with the database's full path. */
  readonly adminMessage: string
}

export function describeOutage(err: unknown, dbFile: string): LicensingOutage {
  const name = path.basename(dbFile)
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
export function degradedLicensing(
  deps: CoreDeps,
  err: unknown,
): DomainModule<typeof licensingContract> & { health(): ComponentHealth } {
  const outage = describeOutage(err, deps.config.paths.licensingDb)
  deps.logger.child('licensing').error(outage.adminMessage, { error: err })
  const publicError = (): ApiError => new ApiError('unavailable', `licensing is unavailable: ${outage.health.reason}`)
  const handlers: Record<string, unknown> = {}
  for (const [name, def] of Object.entries(licensingContract as Record<string, MethodDef>)) {
    const refuse = (): never => {
      throw def.http.includes(' /v1/admin/') ? new ApiError('unavailable', outage.adminMessage) : publicError()
    }
    // A stream handler must fail when called, not return a rejected promise.
    handlers[name] = def.stream ? refuse : async () => refuse()
  }
  return {
    name: 'licensing',
    // Every method of the table has its refusal: the cast only restores the per-method types.
    handlers: handlers as Handlers<typeof licensingContract>,
    mountRoutes(router: Router) {
      // Webhooks and pages (contract routes are matched before this router).
      router.use((req, res, next) => {
        const surface = surfaceOf(req.path)
        if (surface === 'webhook' || surface === 'licensing-public') return sendError(res, publicError(), 'licensing')
        next()
      })
    },
    health: () => outage.health,
  }
}
