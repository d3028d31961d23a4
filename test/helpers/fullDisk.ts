import fs from 'node:fs'
import path from 'node:path'
import { vi } from 'vitest'

/** An fs error as Node raises it. */
export const fsError = (code: string, syscall: string): NodeJS.ErrnoException =>
  Object.assign(new Error(`${code}: simulated, ${syscall}`), { code, syscall })

/**
 * Makes every write to an atomic-write temp file of one of `basenames` fail with `code`, as a
 * full volume does; other files are written as usual. Undo with vi.restoreAllMocks().
 */
export function failWritesOf(basenames: readonly string[], code = 'ENOSPC'): void {
  const realOpen = fs.openSync
  const realWrite = fs.writeSync
  const failing = new Set<number>()
  vi.spyOn(fs, 'openSync').mockImplementation((...args: Parameters<typeof fs.openSync>) => {
    const fd = realOpen(...args)
    if (basenames.some((b) => path.basename(String(args[0])).startsWith(`.${b}.`))) failing.add(fd)
    return fd
  })
  vi.spyOn(fs, 'writeSync').mockImplementation(((fd: number, ...rest: unknown[]) => {
    if (failing.has(fd)) throw fsError(code, 'write')
    return (realWrite as (fd: number, ...r: unknown[]) => number)(fd, ...rest)
  }) as typeof fs.writeSync)
}
