import type { Clock } from './clock'
import { sqliteOutOfSpace } from './files'
import type { Logger } from './logger'

/** A background writer's state, for a status view: since when it fails, and what it could not write since the start. */
export interface WriteOutageState {
  /** When the current outage began (ms); null while writes succeed. */
  readonly failing_since: number | null
  /** Writes (rows, batches: the writer's unit) that failed since the start. */
  readonly failed_writes: number
}

export interface WriteOutageOptions {
  readonly logger: Logger
  readonly clock: Clock
  /** The folder holding the database: a SQLite I/O error there counts as a full volume when it has no room. */
  readonly dataDir: string | undefined
  /** What is written, as the log says it ("key usage", "webhook delivery results"). */
  readonly what: string
  /** What happens to it meanwhile ("kept in memory and written when there is room"). */
  readonly meanwhile: string
}

/**
 * The database writes a background task makes (no request waits on them) failing, told once per
 * outage: the first failure is logged, saying whether the volume is full and what happens to the
 * writes meanwhile; later ones are only counted; the first write that succeeds again says so.
 */
export class WriteOutage {
  private since: number | null = null
  private failed = 0

  constructor(private readonly o: WriteOutageOptions) {}

  /** `n` writes failed with `err`: counted, and logged when it starts an outage. */
  fail(err: unknown, n = 1): void {
    this.failed += n
    if (this.since !== null) return
    this.since = this.o.clock.now()
    const full = sqliteOutOfSpace(err, this.o.dataDir)
    const why = full ? 'no space left for the database' : 'the database refused a write'
    this.o.logger.error(`${this.o.what}: ${why}; ${this.o.meanwhile} (logged once until a write succeeds)`, {
      error: err instanceof Error ? err.message : String(err),
    })
  }

  /**
   * A background task failed with `err`: a database without room is an outage (told once, as
   * `fail`), anything else is logged as `message` each time, as before.
   */
  failure(err: unknown, message: string): void {
    if (sqliteOutOfSpace(err, this.o.dataDir)) return this.fail(err)
    this.o.logger.error(message, { error: err })
  }

  /** A write succeeded: an outage in progress ends, and the log says so. */
  written(): void {
    if (this.since === null) return
    this.o.logger.info(`${this.o.what} is written again`, { failed_writes: this.failed })
    this.since = null
  }

  get failing(): boolean {
    return this.since !== null
  }

  get state(): WriteOutageState {
    return { failing_since: this.since, failed_writes: this.failed }
  }
}
