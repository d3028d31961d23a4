import fs from 'node:fs'
import path from 'node:path'
import { randomBytes } from 'node:crypto'

/**
 * The one way Tandem writes a state file: a temp file beside the target, fsync, rename, so a
 * crash leaves either the old or the new content, never half of one.
 */
export function atomicWriteFile(target: string, data: string | Buffer, opts: { mode?: number } = {}): void {
  const dir = path.dirname(target)
  fs.mkdirSync(dir, { recursive: true })
  const tmp = path.join(dir, tempNameFor(path.basename(target)))
  const fd = fs.openSync(tmp, 'w', opts.mode ?? 0o644)
  try {
    fs.writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
  try {
    if (opts.mode !== undefined) fs.chmodSync(tmp, opts.mode)
    fs.renameSync(tmp, target)
  } catch (err) {
    fs.rmSync(tmp, { force: true })
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
 * Reads a state file. A file that cannot be read or parsed is moved aside as `<name>.corrupt` so
 * the caller can start fresh without losing what was there (`keptAs` is null when even the move
 * failed).
 */
export function readStateFile<T>(file: string, parse: (text: string) => T): ReadResult<T> {
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'missing' }
    return { kind: 'corrupt', error: `cannot read: ${(err as Error).message}`, keptAs: keepAside(file) }
  }
  try {
    return { kind: 'ok', value: parse(text) }
  } catch (err) {
    return { kind: 'corrupt', error: (err as Error).message, keptAs: keepAside(file) }
  }
}

function keepAside(file: string): string | null {
  const keptAs = `${file}.corrupt`
  try {
    fs.renameSync(file, keptAs)
    return keptAs
  } catch {
    return null
  }
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
