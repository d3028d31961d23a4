/**
 * Entry: headless when asked (`--headless`) or when not running inside Electron; otherwise the
 * desktop shell. The desktop module is reached only by dynamic import, so headless mode never
 * loads `electron` (under plain Node the npm stub throws on import).
 */
import { runHeadless } from './headless'

const headless = process.argv.includes('--headless') || !process.versions.electron

if (headless) {
  runHeadless().catch((err: unknown) => {
    process.stderr.write(`tandem: failed to start: ${err instanceof Error ? err.message : String(err)}\n`)
    process.exit(1)
  })
} else {
  import('./desktop')
    .then((m) => m.runDesktop())
    .catch((err: unknown) => {
      process.stderr.write(
        `tandem: desktop failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
      )
      process.exit(1)
    })
}
