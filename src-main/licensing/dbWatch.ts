/**
 * Watches the licensing database while the shop runs: a `quick_check` every hour on a fresh
 * read-only connection (so it reads what is on disk, not the writer's page cache) reports damage
 * found after start, and a rolling backup is taken at start and then once a day, by the injected
 * clock. A database that failed its check is never backed up: a damaged copy would push a good
 * backup out of the rotation.
 */
import path from 'node:path'
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import type { LicensingBackups } from './backups'
import { checkFile, LicensingDbDamaged } from './dbCheck'

/** How often the running database is checked (quick_check reads every page: about 10 ms per MiB). */
export const DB_CHECK_INTERVAL_MS = 60 * 60_000
/** How often a backup is taken after the one at start. */
export const BACKUP_INTERVAL_MS = 24 * 60 * 60_000

export interface Timers {
  setInterval(fn: () => void, ms: number): unknown
  clearInterval(handle: unknown): void
}

const nodeTimers: Timers = {
  setInterval: (fn, ms) => setInterval(fn, ms).unref(),
  clearInterval: (h) => clearInterval(h as NodeJS.Timeout),
}

export interface DbWatchOptions {
  readonly file: string
  readonly backups: LicensingBackups
  readonly newestBackup: () => string | null
  readonly clock: Clock
  readonly logger: Logger
  /** Called once, when a check finds damage. */
  readonly onDamage: (err: LicensingDbDamaged) => void
  readonly checkIntervalMs?: number
  readonly backupIntervalMs?: number
  readonly timers?: Timers
}

export class LicensingDbWatch {
  private timer: unknown = null
  private running: Promise<unknown> | null = null
  private lastBackupAt: number | null = null
  private damage: LicensingDbDamaged | null = null

  constructor(private readonly o: DbWatchOptions) {}

  get damaged(): LicensingDbDamaged | null {
    return this.damage
  }

  /** The backup at start (the start checks have passed), then the periodic timer. */
  async start(): Promise<void> {
    if (this.timer !== null) return
    if (this.o.backups.enabled) {
      this.running = this.backup('start')
      await this.running.finally(() => {
        this.running = null
      })
    } else this.o.logger.info('licensing backups are off (LICENSING_BACKUPS=0)')
    const timers = this.o.timers ?? nodeTimers
    this.timer = timers.setInterval(() => {
      if (this.running) return
      this.running = this.tick()
        .catch((err: unknown) => this.o.logger.error('licensing database check failed to run', { error: err }))
        .finally(() => {
          this.running = null
        })
    }, this.o.checkIntervalMs ?? DB_CHECK_INTERVAL_MS)
  }

  private async backup(why: 'start' | 'daily'): Promise<string | null> {
    this.lastBackupAt = this.o.clock.now()
    const file = await this.o.backups.take()
    if (file) this.o.logger.debug('licensing backup taken', { why, file: path.basename(file) })
    return file
  }

  /** One round: the check, then the daily backup when it is due and the check passed. */
  async tick(): Promise<{ ok: boolean; backup: string | null }> {
    if (this.damage) return { ok: false, backup: null }
    const failed = checkFile(this.o.file)
    if (failed) {
      const backup = this.o.newestBackup()
      this.damage = new LicensingDbDamaged(this.o.file, failed[0], backup, failed[1])
      this.o.logger.error('licensing database failed its periodic check: licensing is degraded, no more backups', {
        file: path.basename(this.o.file),
        problem: failed[1],
        newestBackup: backup ? path.basename(backup) : null,
      })
      this.o.onDamage(this.damage)
      return { ok: false, backup: null }
    }
    this.o.logger.debug('licensing database passed its periodic check', { file: path.basename(this.o.file) })
    const due =
      this.o.backups.enabled &&
      (this.lastBackupAt === null ||
        this.o.clock.now() - this.lastBackupAt >= (this.o.backupIntervalMs ?? BACKUP_INTERVAL_MS))
    return { ok: true, backup: due ? await this.backup('daily') : null }
  }

  async stop(): Promise<void> {
    if (this.timer !== null) (this.o.timers ?? nodeTimers).clearInterval(this.timer)
    this.timer = null
    await this.running
  }
}
