// `npm run bench`: every benchmark in this folder, one after another, each printing its figures.
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

const only = process.argv.slice(2)
const dir = path.dirname(new URL(import.meta.url).pathname)
const benches = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.mts') && f !== 'run.mts')
  .filter((f) => only.length === 0 || only.some((o) => f.startsWith(o)))
  .sort()
let failed = 0
for (const b of benches) {
  console.log(`\n### ${b}`)
  const res = spawnSync('npx', ['tsx', path.join(dir, b)], { stdio: 'inherit' })
  if (res.status !== 0) failed += 1
}
process.exit(failed === 0 ? 0 : 1)
