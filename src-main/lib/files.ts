import fs from 'node:fs'
import path from 'node:path'
import { randomBytes } from 'node:crypto'

/** What a full, over-quota or read-only volume is called in an error (the errno codes we recognise). */
const STORAGE_FULL = {
  ENOSPC: 'no space left',
  EDQUOT: 'disk quota exceeded',
  EROFS: 'read-only file system',
} as const

/**
 * A state file could not be written because its volume is full, over quota or read-only: says
 * which volume (the folder written into) and what (the file's role). Answered 507 (see toPublicError).
 */
export class StorageFull extends Error {
  constructor(
    readonly reason: keyof typeof STORAGE_FULL,
    readonly file: string,
    /** What the file is to the operator ("settings"); null: the file name says it. */
    readonly role: string | null,
  ) {
    const what = role === null ? path.basename(file) : `the ${role}`
    super(`${STORAGE_FULL[reason]} on the volume holding ${path.dirname(file)}: could not write ${what}`)
    this.name = 'StorageFull'
  }
}

/** Free space under which a SQLite I/O error on a volume is taken for the volume being full. */
const FULL_BELOW_BYTES = 1024 * 1024

/**
 * Whether a SQLite error means its volume had no room: SQLITE_FULL, or an I/O error
 * (SQLITE_IOERR_*, whose errno better-sqlite3 does not pass on) while the volume holding `dir`
 * has next to no space left.
 */
export function sqliteOutOfSpace(err: unknown, dir: string | undefined): boolean {
  const code = (err as { code?: unknown } | null)?.code
  if (typeof code !== 'string') return false
  if (code === 'SQLITE_FULL') return true
  if (!code.startsWith('SQLITE_IOERR') || dir === undefined) return false
  try {
    const s = fs.statfsSync(dir)
    return s.bavail * s.bsize < FULL_BELOW_BYTES
  } catch {
    return false
  }
}

/**
 * A database write that found no room (sqliteOutOfSpace): answered 507 like a state file,
 * naming what could not be done (`what`, e.g. "create a product").
 */
export class DatabaseFull extends StorageFull {
  constructor(dir: string, what: string) {
    super('ENOSPC', path.join(dir, 'database'), what)
    this.message = `no space left on the volume holding ${dir}: could not ${what} (the database could not be written)`
    this.name = 'DatabaseFull'
  }
}

/** `err` as DatabaseFull (`what` could not be done) when it is SQLite finding no room in `dir`, else `err` itself. */
export function asDatabaseFull(err: unknown, dir: string | undefined, what: string): unknown {
  return sqliteOutOfSpace(err, dir) ? new DatabaseFull(dir ?? '.', what) : err
}

/**
 * The one way Tandem writes a state file: a temp file beside the target, fsync, rename, so a
 * crash leaves either the old or the new content, never half of one. A write that fails removes
 * its temp file at once; a full, over-quota or read-only volume throws StorageFull naming `role`
 * (what the file is to the operator, e.g. "settings"; else the file name).
 */
export function atomicWriteFile(
  target: string,
  data: string | Buffer,
  opts: { mode?: number; role?: string } = {},
): void {
  const dir = path.dirname(target)
  const tmp = path.join(dir, tempNameFor(path.basename(target)))
  try {
    fs.mkdirSync(dir, { recursive: true })
    writeDurably(tmp, typeof data === 'string' ? Buffer.from(data) : data, opts.mode ?? 0o644)
    if (opts.mode !== undefined) fs.chmodSync(tmp, opts.mode)
    fs.renameSync(tmp, target)
  } catch (err) {
    try {
      fs.rmSync(tmp, { force: true })
    } catch {
      // A read-only volume cannot remove it either; the next start's sweep does.
    }
    const code = (err as NodeJS.ErrnoException).code
    if (code !== undefined && Object.hasOwn(STORAGE_FULL, code))
      throw new StorageFull(code as keyof typeof STORAGE_FULL, target, opts.role ?? null)
    throw err
  }
  try {
    const dfd = fs.openSync(dir, 'r')
    fs.fsyncSync(dfd)
    fs.closeSync(dfd)
  } catch {
    // Directory fsync is best effort (not supported on every filesystem).
  }
}

/** Writes all of `bytes` (a volume filling up may take only part of a write) and fsyncs. */
function writeDurably(file: string, bytes: Buffer, mode: number): void {
  const fd = fs.openSync(file, 'w', mode)
  try {
    for (let done = 0; done < bytes.length;) {
      const n = fs.writeSync(fd, bytes, done, bytes.length - done)
      if (n <= 0) throw Object.assign(new Error(`ENOSPC: a write stored nothing, ${file}`), { code: 'ENOSPC' })
      done += n
    }
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

/** `.<name>.<12 hex>.tmp`: the temp file beside a target while it is being written. */
const TEMP_NAME = /^\..+\.[0-9a-f]{12}\.tmp$/

function tempNameFor(basename: string): string {
  return `.${basename}.${randomBytes(6).toString('hex')}.tmp`
}

/**
 * Removes temp files an atomic write left behind when the process died between write and rename
 * (kill -9, power loss). Only names of the atomic-write pattern, only directly in the folders
 * given (never recursively); run at start, before anything writes. Returns the paths removed.
 */
export function removeOrphanedTempFiles(dirs: readonly string[]): string[] {
  const removed: string[] = []
  for (const dir of new Set(dirs)) {
    let entries: fs.Dirent[]
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true })
    } catch {
      continue // a folder that does not exist yet has nothing to clean
    }
    for (const e of entries) {
      if (!e.isFile() || !TEMP_NAME.test(e.name)) continue
      const file = path.join(dir, e.name)
      try {
        fs.rmSync(file)
        removed.push(file)
      } catch {
        // Gone already, or not ours to remove: leave it.
      }
    }
  }
  return removed
}

export type ReadResult<T> =
  { kind: 'missing' } | { kind: 'ok'; value: T } | { kind: 'corrupt'; error: string; keptAs: string | null }

/**
 * Reads a state file. A file that cannot be read or parsed is moved aside (moveAsideCorrupt) so
 * the caller can start fresh without losing what was there (`keptAs` is null when even the move
 * failed); the caller logs it with replacedStateFileMessage. `now` names the copy kept aside.
 */
export function readStateFile<T>(file: string, parse: (text: string) => T, now: number = Date.now()): ReadResult<T> {
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'missing' }
    return { kind: 'corrupt', error: `cannot read: ${(err as Error).message}`, keptAs: moveAsideCorrupt(file, now) }
  }
  try {
    return { kind: 'ok', value: parse(text) }
  } catch (err) {
    return { kind: 'corrupt', error: (err as Error).message, keptAs: moveAsideCorrupt(file, now) }
  }
}

/** More same-second copies of one file than this is a loop, not an operator's history. */
const MAX_KEPT_PER_SECOND = 100

/**
 * Moves a malformed state file aside as `<name>.corrupt-<UTC time, e.g. 20261127T215012Z>` (a
 * second one within the same second gets `-2`, `-3`, …), so an earlier copy is never overwritten.
 * Returns where it went, or null when it could not be moved (it is then left where it was).
 */
export function moveAsideCorrupt(file: string, now: number = Date.now()): string | null {
  const stamp = new Date(now)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')
  for (let n = 1; n <= MAX_KEPT_PER_SECOND; n++) {
    const keptAs = `${file}.corrupt-${stamp}${n === 1 ? '' : `-${n}`}`
    if (fs.existsSync(keptAs)) continue
    try {
      fs.renameSync(file, keptAs)
      return keptAs
    } catch {
      return null
    }
  }
  return null
}

/**
 * The one wording for a state file that was replaced because it was malformed: what and where it
 * is, why, where the old one was kept, and what happens now (`then`, e.g. "starting a fresh one").
 */
export function replacedStateFileMessage(
  what: string,
  file: string,
  res: { error: string; keptAs: string | null },
  then: string,
): string {
  const state = res.error.startsWith('cannot read:') ? 'is unreadable' : 'is malformed'
  const kept = res.keptAs !== null ? `moved aside to ${res.keptAs}` : 'it could not be moved aside'
  return `${what} ${file} ${state} (${res.error.slice(0, 300)}); ${kept}; ${then}`
}

/** Serialises async read-modify-write cycles on one resource so no update is lost. */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve()

  run<T>(task: () => T | Promise<T>): Promise<T> {
    const next = this.tail.then(task, task)
    this.tail = next.catch(() => undefined)
    return next
  }
}
