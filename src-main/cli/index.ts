/**
 * Entry of the `tandem` command (bin/tandem.mjs loads the built copy). `serve` leaves the daemon
 * running, so the exit status is set rather than forced.
 */
import { runHeadless } from '../headless'
import { runCli } from './program'

runCli(process.argv.slice(2), {
  env: process.env,
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  serve: (env) => runHeadless({ env }),
}).then(
  (code) => {
    process.exitCode = code
  },
  (err: unknown) => {
    process.stderr.write(`tandem: ${err instanceof Error ? err.message : String(err)}\n`)
    process.exitCode = 1
  },
)
