import fs from 'node:fs'
import type { ComponentHealth } from '../contract/system'
import type { Clock } from '../lib/clock'

/**
 * Below this much free space in DATA_DIR, health reports storage degraded. 1 GiB is the default
 * upload floor (GATEWAY_DISK_FLOOR_MB, below which uploads are already refused) and far more than
 * the state files need (kilobytes to a few megabytes), so the warning comes before any write
 * fails. A share of the volume would warn for nothing on a large disk (5 % of 4 TB is 200 GB) and
 * too late on a small one.
 */
export const LOW_DISK_BYTES = 1024 ** 3

/** Re-read free space at most this often: /api/health is open and polled. */
const REFRESH_MS = 5000

/** A volume that does not answer (a hung network mount) must not hold /api/health. */
const STATFS_TIMEOUT_MS = 2000

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error('statfs timed out'), { code: 'ETIMEDOUT' })), ms)
    timer.unref()
  })
  return Promise.race([work, late]).finally(() => clearTimeout(timer))
}

/** The part of fs.statfs this reads. */
export type StatVolume = (dir: string) => Promise<{ bavail: number; bsize: number }>

const MiB = 1024 ** 2

/** The free space of the volume holding DATA_DIR as a health component (no path: /api/health is open). */
export function storageHealth(opts: {
  dataDir: string
  clock: Clock
  statfs?: StatVolume
  lowBytes?: number
}): () => Promise<ComponentHealth> {
  const statfs = opts.statfs ?? ((dir: string) => fs.promises.statfs(dir))
  const low = opts.lowBytes ?? LOW_DISK_BYTES
  let last: { at: number; health: Promise<ComponentHealth> } | null = null
  const read = async (): Promise<ComponentHealth> => {
    try {
      const s = await withTimeout(statfs(opts.dataDir), STATFS_TIMEOUT_MS)
      const free = s.bavail * s.bsize
      if (free >= low) return { state: 'ok', reason: null, remedy: null }
      return {
        state: 'degraded',
        reason: `DATA_DIR has ${Math.floor(free / MiB)} MiB free, under the ${Math.floor(low / MiB)} MiB Tandem keeps: settings, sessions and uploads may fail to save`,
        remedy:
          'Free space on the volume holding DATA_DIR (its path is in GET /api/config), or move DATA_DIR to a larger one.',
      }
    } catch (err) {
      return {
        state: 'degraded',
        reason: `free space of DATA_DIR cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
        remedy: 'Check that DATA_DIR exists and is readable by the Tandem process.',
      }
    }
  }
  return () => {
    const now = opts.clock.now()
    if (last === null || now - last.at >= REFRESH_MS) last = { at: now, health: read() }
    return last.health
  }
}
