import type { Handlers } from '../contract/define'
import { ApiError } from '../contract/errors'
import type { servicesContract } from '../contract/services'
import type { JobRecord } from '../contract/system'
import type { JobRegistry } from '../platform/jobs'
import type { ServiceManager } from './manager'
import type { Prebuilt } from './prebuilt'
import type { StatusService } from './status'

export type ServiceMethods =
  | 'listServices'
  | 'serviceAction'
  | 'serviceLogs'
  | 'deleteService'
  | 'prebuiltCatalog'
  | 'prebuiltInstall'
  | 'getPrebuiltInstall'
  | 'streamPrebuiltInstall'

/** The services and prebuilt methods of the services contract. */
export function serviceHandlers(d: {
  manager: ServiceManager
  status: Pick<StatusService, 'list'>
  prebuilt: Prebuilt
  jobs: JobRegistry
}): Pick<Handlers<typeof servicesContract>, ServiceMethods> {
  /** An install job, or 404: other kinds of job are not reachable through the install routes. */
  const install = (id: string): JobRecord => {
    const job = d.jobs.get(id)
    if (job.kind !== 'prebuilt') throw new ApiError('not_found', `no install ${id}`)
    return job
  }
  return {
    listServices: async (_in, ctx) => d.status.list(ctx.signal),
    serviceAction: async ({ name, action }) => d.manager.act(name, action),
    serviceLogs: async ({ name, tail }) => d.manager.logs(name, tail),
    deleteService: async ({ name }) => {
      await d.manager.remove(name)
      return { deleted: true as const }
    },
    prebuiltCatalog: async () => ({ images: d.prebuilt.catalog() }),
    prebuiltInstall: async (input) => ({ job_id: d.prebuilt.install(input).id }),
    getPrebuiltInstall: async ({ id }) => install(id),
    streamPrebuiltInstall: ({ id, after }, ctx) => {
      install(id) // 404 before the stream opens
      return d.jobs.events(id, after ?? 0, ctx.signal)
    },
  }
}
