import fs from 'node:fs'
import path from 'node:path'
import { ApiError } from '../../contract/errors'
import type { Logger } from '../../lib/logger'
import type { ConsumerIdentity } from '../keys/consumerKeyStore'
import { MiB } from '../relay/wire'

export interface SpoolLimits {
  /** Bytes all uploads in progress may hold on disk together. */
  readonly budgetBytes: number
  /** Free space DATA_DIR keeps: an upload that would leave less is refused (507). */
  readonly diskFloorBytes: number
}

/** While a file is written, free space is checked again after this many bytes. */
const DISK_CHECK_EVERY = 64 * MiB

const mib = (n: number): string => `${Math.ceil(n / MiB)} MiB`

/**
 * Whom an upload is charged to beside the spool: a key sold with a license (issue 45), which may
 * hold a third of the spool, so two buyers uploading all they can leave a third's room for the
 * next; null for everyone else (the operator's keys and the LAN), held only to the spool's total.
 */
export function spoolHolder(who: ConsumerIdentity | undefined): string | null {
  return who?.kind === 'key' && who.licensed ? `key ${who.id}` : null
}

/**
 * The folder where uploads wait while the asr reads them (under DATA_DIR: /tmp is often RAM, and an
 * upload can be gigabytes). It holds at most `budgetBytes` across all uploads in progress and never
 * fills the disk below `diskFloorBytes`. Each upload takes a lease; releasing it removes its file.
 */
export class UploadSpool {
  private reserved = 0
  private seq = 0
  /** Bytes held per holder (spoolHolder); a holder is removed when it holds nothing. */
  private readonly byHolder = new Map<string, number>()

  private constructor(
    readonly dir: string,
    private readonly limits: SpoolLimits,
  ) {}

  /** A private folder for this run; folders left by a run that crashed are removed first. */
  static open(root: string, limits: SpoolLimits, logger: Logger): UploadSpool {
    fs.mkdirSync(root, { recursive: true, mode: 0o700 })
    for (const name of fs.readdirSync(root)) {
      if (!name.startsWith('uploads-')) continue
      try {
        fs.rmSync(path.join(root, name), { recursive: true, force: true })
      } catch (err) {
        logger.warn('could not remove a stale upload folder', { name, error: err })
      }
    }
    return new UploadSpool(fs.mkdtempSync(path.join(root, 'uploads-')), limits)
  }

  /**
   * Reserves room for an upload of `expectedBytes` (0 when unknown), charged to `holder` too when
   * it has one: 413, 503 or 507 when there is none.
   */
  async lease(expectedBytes: number, holder: string | null = null): Promise<SpoolLease> {
    this.take(expectedBytes, expectedBytes, holder)
    try {
      await this.checkDisk(expectedBytes)
    } catch (err) {
      this.give(expectedBytes, holder)
      throw err
    }
    this.seq += 1
    return new SpoolLease(this, path.join(this.dir, `upload-${process.pid}-${this.seq}`), expectedBytes, holder)
  }

  /** What one holder's uploads may hold together: a third of the spool. */
  get holderShare(): number {
    return Math.floor(this.limits.budgetBytes / 3)
  }

  /** Bytes held by one holder's uploads in progress. */
  heldBy(holder: string): number {
    return this.byHolder.get(holder) ?? 0
  }

  /** Writes a buffer to a new spool file (the playground's uploads arrive whole). */
  async writeBuffer(data: Buffer): Promise<SpoolLease> {
    const lease = await this.lease(data.length)
    try {
      await lease.writeAll(data)
      return lease
    } catch (err) {
      await lease.release()
      throw err
    }
  }

  /** Bytes currently held by uploads in progress. */
  get inUse(): number {
    return this.reserved
  }

  remove(): void {
    fs.rmSync(this.dir, { recursive: true, force: true })
  }

  /** @internal Charges `more` bytes for a lease that will then hold `total`. */
  take(more: number, total: number, holder: string | null): void {
    if (total > this.limits.budgetBytes)
      throw new ApiError(
        'payload_too_large',
        `upload is larger than the upload spool (${mib(this.limits.budgetBytes)})`,
      )
    if (holder !== null && total > this.holderShare)
      throw new ApiError(
        'payload_too_large',
        `upload is larger than one key may hold in the upload spool (${mib(this.holderShare)})`,
      )
    if (this.reserved + more > this.limits.budgetBytes)
      throw new ApiError(
        'unavailable',
        `the upload spool is full (${mib(this.reserved)} of ${mib(this.limits.budgetBytes)} held by uploads in progress); retry shortly`,
        { headers: { 'Retry-After': '30' } },
      )
    if (holder !== null && this.heldBy(holder) + more > this.holderShare)
      throw new ApiError(
        'unavailable',
        `this key's uploads in progress hold ${mib(this.heldBy(holder))} of the ${mib(this.holderShare)} it may hold in the upload spool; retry shortly`,
        { headers: { 'Retry-After': '30' } },
      )
    this.reserved += more
    if (holder !== null) this.byHolder.set(holder, this.heldBy(holder) + more)
  }

  /** @internal */
  give(bytes: number, holder: string | null): void {
    this.reserved = Math.max(0, this.reserved - bytes)
    if (holder === null) return
    const left = this.heldBy(holder) - bytes
    if (left > 0) this.byHolder.set(holder, left)
    else this.byHolder.delete(holder)
  }

  /** @internal Refuses (507) when writing `bytes` more would leave DATA_DIR below the floor. */
  async checkDisk(bytes: number): Promise<void> {
    const s = await fs.promises.statfs(this.dir)
    const free = s.bavail * s.bsize
    if (free - bytes < this.limits.diskFloorBytes)
      throw new ApiError(
        'insufficient_storage',
        `not enough free disk space for this upload: DATA_DIR has ${mib(free)} free and keeps at least ${mib(this.limits.diskFloorBytes)}`,
        { status: 507 },
      )
  }
}

/** One upload's room in the spool and its file; `release` frees both, whatever happened before. */
export class SpoolLease {
  private held: number
  private written = 0
  private checkedAt = 0
  private writer: Promise<void> = Promise.resolve()
  private released = false

  constructor(
    private readonly spool: UploadSpool,
    readonly path: string,
    expectedBytes: number,
    private readonly holder: string | null = null,
  ) {
    this.held = expectedBytes
  }

  get size(): number {
    return this.written
  }

  /** Counts `n` more bytes written: past the reservation the spool's budget is charged, and the disk re-checked now and then. */
  async grow(n: number): Promise<void> {
    this.written += n
    if (this.written > this.held) {
      this.spool.take(this.written - this.held, this.written, this.holder)
      this.held = this.written
    }
    if (this.written - this.checkedAt >= DISK_CHECK_EVERY) {
      this.checkedAt = this.written
      await this.spool.checkDisk(0)
    }
  }

  /** The file's write stream (created once, never over an existing file). */
  createWriteStream(): fs.WriteStream {
    const ws = fs.createWriteStream(this.path, { flags: 'wx', mode: 0o600 })
    this.writer = new Promise((resolve) => ws.once('close', () => resolve()))
    return ws
  }

  async writeAll(data: Buffer): Promise<void> {
    await this.grow(data.length)
    const ws = this.createWriteStream()
    await new Promise<void>((resolve, reject) => {
      ws.once('error', reject)
      ws.end(data, () => resolve())
    })
  }

  /** Frees the reservation and removes the file once its writer has closed. Safe to call more than once. */
  async release(): Promise<void> {
    if (this.released) return
    this.released = true
    this.spool.give(this.held, this.holder)
    await this.writer
    await fs.promises.rm(this.path, { force: true })
  }
}
