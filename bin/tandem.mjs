#!/usr/bin/env node
// The `tandem` command: runs the built command line (out/main/cli.js, made by `npm run build`).
import fs from 'node:fs'
import { fileURLToPath, pathToFileURL } from 'node:url'

const built = fileURLToPath(new URL('../out/main/cli.js', import.meta.url))
if (!fs.existsSync(built)) {
  process.stderr.write(`tandem: ${built} is missing; run \`npm run build\` first\n`)
  process.exit(1)
}
await import(pathToFileURL(built).href)
