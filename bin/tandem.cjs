#!/usr/bin/env node
// The `tandem` command: runs the built command line (out/main/cli.js, made by `npm run build`).
const path = require('node:path')
const fs = require('node:fs')

const built = path.join(__dirname, '..', 'out', 'main', 'cli.js')
if (!fs.existsSync(built)) {
  process.stderr.write(`tandem: ${built} is missing; run \`npm run build\` first\n`)
  process.exit(1)
}
require(built)
