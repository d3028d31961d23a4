import type { Handlers } from '../contract/define'
import { ApiError } from '../contract/errors'
import type { modelsContract } from '../contract/models'
import type { JobRecord } from '../contract/system'
import type { JobRegistry } from '../platform/jobs'
import type { WeightsOnDisk } from './disk'
import type { Downloads } from './downloads'

type DiskMethods = 'diskStatus' | 'deleteWeights' | 'startDownload' | 'getDownload' | 'streamDownload'

/** The weights-on-disk and download methods of the models contract. */
export function diskHandlers(d: {
  disk: WeightsOnDisk
  downloads: Downloads
  jobs: JobRegistry
}): Pick<Handlers<typeof modelsContract>, DiskMethods> {
  /** A download job, or 404: other kinds of job are not reachable through the download routes. */
  const download = (id: string): JobRecord => {
    const job = d.jobs.get(id)
    if (job.kind !== 'download') throw new ApiError('not_found', `no download ${id}`)
    return job
  }
  return {
    diskStatus: async (_in, ctx) => d.disk.status(ctx.signal),
    deleteWeights: async ({ key }) => d.disk.remove(key),
    startDownload: async (input) => d.downloads.start(input),
    getDownload: async ({ id }) => download(id),
    streamDownload: ({ id, after }, ctx) => {
      download(id) // 404 before the stream opens
      return d.jobs.events(id, after ?? 0, ctx.signal)
    },
  }
}
