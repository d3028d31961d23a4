import { Worker } from 'node:worker_threads'
import type Database from 'better-sqlite3'
import type { Logger } from './logger'
import { sqliteModuleFile, sqliteOptions } from './nativeBinding'

/** One checkpoint: frames in the write-ahead log, and how many of them are now in the database file. */
export interface CheckpointResult {
  readonly log: number
  readonly checkpointed: number
}

/** SQLite's default: a commit that leaves the log this many pages long checkpoints it at once. */
const AUTOCHECKPOINT_PAGES = 1000
/** How long a checkpoint asked for on demand may take before the caller stops waiting. */
const CHECKPOINT_WAIT_MS = 30_000
/** How long the worker may take to close its connection and exit when stopped. */
const STOP_WAIT_MS = 5_000

/**
 * The worker's script (plain CommonJS, run with `eval`, so no bundler has to know about a second
 * entry). Its own connection checkpoints PASSIVE, which never waits for and never blocks the main
 * connection; a round that leaves frames behind (written while it ran) goes again, a few times, so
 * the log is seen whole and the next write can start it over from the beginning.
 */
const WORKER_SCRIPT = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.sqlite)
const db = new Database(workerData.file, { fileMustExist: true, ...workerData.options })
const round = () => {
  let r
  for (let i = 0; i < 4; i++) {
    r = db.pragma('wal_checkpoint(PASSIVE)')[0]
    if (r.checkpointed === r.log) break
  }
  return { log: r.log, checkpointed: r.checkpointed }
}
const timer = setInterval(() => {
  try { round() } catch (err) { parentPort.postMessage({ error: String(err && err.message) }) }
}, workerData.intervalMs)
parentPort.on('message', (m) => {
  if (m === 'stop') {
    clearInterval(timer)
    db.close()
    parentPort.close()
    return
  }
  try { parentPort.postMessage({ id: m, result: round() }) } catch (err) { parentPort.postMessage({ id: m, error: String(err && err.message) }) }
})
parentPort.postMessage({ ready: true })
`

type WorkerMessage =
  { ready: true } | { id: number; result: CheckpointResult } | { id: number; error: string } | { error: string }

/**
 * Checkpoints a WAL database from a worker thread. SQLite checkpoints on the committing connection
 * by default: the commit that grows the log past 1,000 pages copies them into the database file and
 * syncs it, holding the event loop for 20–35 ms on this project's machines while every other request
 * waits. With the worker running, the main connection never checkpoints (`wal_autocheckpoint = 0`)
 * and the worker's own connection does it every `intervalMs`. If the worker cannot start or dies,
 * the main connection checkpoints for itself again, as before: nothing is lost either way.
 */
export class WalCheckpointer {
  private readonly pending = new Map<
    number,
    { resolve(r: CheckpointResult): void; reject(e: Error): void; timer: NodeJS.Timeout }
  >()
  private nextId = 1
  private running = false
  private stopped = false
  private settle: (running: boolean) => void = () => undefined
  /** Resolves true once the worker has its connection and the main one stops checkpointing; false if it never does. */
  readonly started: Promise<boolean> = new Promise((resolve) => (this.settle = resolve))

  private constructor(
    private readonly db: Database.Database,
    private readonly worker: Worker,
    private readonly logger: Logger,
  ) {
    worker.on('message', (m: WorkerMessage) => this.onMessage(m))
    worker.on('error', (err) => this.fallBack(`the checkpoint worker failed: ${err.message}`))
    worker.on('exit', () => {
      if (!this.stopped) this.fallBack('the checkpoint worker exited')
    })
  }

  /** Starts the worker for the database at `file`, which `db` has open; null for an in-memory database. */
  static start(
    db: Database.Database,
    file: string,
    logger: Logger,
    opts: { intervalMs?: number } = {},
  ): WalCheckpointer | null {
    if (file === ':memory:') return null
    const sqlite = sqliteModuleFile()
    if (sqlite === null) {
      logger.warn('the database checkpoints on its own connection: better-sqlite3 not found for a worker thread')
      return null
    }
    let worker: Worker
    try {
      worker = new Worker(WORKER_SCRIPT, {
        eval: true,
        workerData: {
          sqlite,
          file,
          options: sqliteOptions(),
          intervalMs: opts.intervalMs ?? 1000,
        },
      })
    } catch (err) {
      logger.warn('the database checkpoints on its own connection: no worker thread', {
        error: err instanceof Error ? err.message : String(err),
      })
      return null
    }
    worker.unref()
    return new WalCheckpointer(db, worker, logger)
  }

  /** True while the worker does the checkpoints (the main connection does none). */
  get active(): boolean {
    return this.running
  }

  /** One checkpoint now, on the worker; rejects when the worker is not running or does not answer. */
  checkpoint(): Promise<CheckpointResult> {
    if (!this.running) return Promise.reject(new Error('the checkpoint worker is not running'))
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id)
        reject(new Error(`no checkpoint within ${CHECKPOINT_WAIT_MS / 1000} s`))
      }, CHECKPOINT_WAIT_MS)
      this.pending.set(id, { resolve, reject, timer })
      this.worker.postMessage(id)
    })
  }

  /** Stops the worker; the main connection checkpoints for itself again (and when it closes). */
  async stop(): Promise<void> {
    if (!this.handBack(new Error('the checkpoint worker stopped'))) return
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()))
    this.worker.postMessage('stop')
    const late = setTimeout(() => void this.worker.terminate(), STOP_WAIT_MS)
    await exited
    clearTimeout(late)
  }

  private onMessage(m: WorkerMessage): void {
    if ('ready' in m) {
      if (this.stopped) return
      this.db.pragma('wal_autocheckpoint = 0')
      this.running = true
      this.settle(true)
      return
    }
    if ('id' in m) {
      const waiting = this.pending.get(m.id)
      if (!waiting) return
      this.pending.delete(m.id)
      clearTimeout(waiting.timer)
      if ('result' in m) waiting.resolve(m.result)
      else waiting.reject(new Error(m.error))
      return
    }
    this.logger.warn('a background checkpoint failed; the next one tries again', { error: m.error })
  }

  private fallBack(why: string): void {
    if (this.handBack(new Error(why))) this.logger.warn(`${why}; the database checkpoints on its own connection again`)
  }

  /**
   * Gives checkpoints back to the main connection and fails every checkpoint still waiting, once;
   * false when that was already done.
   */
  private handBack(why: Error): boolean {
    if (this.stopped) return false
    this.stopped = true
    this.running = false
    this.settle(false)
    if (this.db.open) this.db.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`)
    for (const { reject, timer } of this.pending.values()) {
      clearTimeout(timer)
      reject(why)
    }
    this.pending.clear()
    return true
  }
}
