import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

/**
 * A real 20 MB tmpfs as DATA_DIR for the full-disk cases (issue 42): mounting needs root, so
 * `mounted` is false elsewhere and the cases are skipped, saying so.
 */
export interface TmpfsVolume {
  readonly root: string
  readonly mounted: boolean
  /** Writes a filler file until the volume refuses a byte more. */
  fill(): void
  /** Removes the filler: there is room again. */
  free(): void
  /** Unmounts and removes the mount point. */
  remove(): void
}

export function tmpfsVolume(sizeMb = 20): TmpfsVolume {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-full-'))
  const filler = path.join(root, 'filler')
  const mounted = (() => {
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m`, 'tmpfs', root], { stdio: 'ignore' })
      return true
    } catch {
      return false
    }
  })()
  return {
    root,
    mounted,
    fill() {
      const fd = fs.openSync(filler, 'a')
      try {
        try {
          for (;;) fs.writeSync(fd, Buffer.alloc(64 * 1024, 1))
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err
        }
        // The last bytes too: small blocks until nothing fits.
        try {
          for (;;) fs.writeSync(fd, Buffer.alloc(512, 1))
        } catch {
          // full
        }
      } finally {
        fs.closeSync(fd)
      }
    },
    free() {
      fs.rmSync(filler, { force: true })
    },
    remove() {
      if (mounted) execFileSync('umount', ['-l', root])
      fs.rmSync(root, { recursive: true, force: true })
    },
  }
}
