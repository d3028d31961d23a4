// Licensing admin lists at scale (issue 13, item 4): with 10,000 licences (and their invoices and
// subscriptions) the time to answer the first page of each list over real HTTP on loopback, a
// search-as-you-type query, a sort on another column, and a full CSV export. Figures only; target
// for the first licence page: < 300 ms. Run: npx tsx test/bench/adminLists.mts
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'

const LICENSES = 10_000
const RUNS = 20

async function seed(dataDir: string): Promise<void> {
  const { loadConfig } = await import('../../src-main/config/load')
  const { createLogger, MemorySink } = await import('../../src-main/lib/logger')
  const { ManualClock } = await import('../../src-main/lib/clock')
  const { testCoreDeps } = await import('../helpers/coreDeps')
  const { createLicensingServices } = await import('../../src-main/licensing/licensingServices')
  const { seedLicensing } = await import('../helpers/licensingSeed')
  const clock = new ManualClock(Date.now() - LICENSES * 60_000)
  const config = loadConfig({ env: { DATA_DIR: dataDir, RATE_SOURCES: 'http://127.0.0.1:9' } })
  const s = createLicensingServices(testCoreDeps({ config, clock, logger: createLogger({ sink: new MemorySink() }) }))
  seedLicensing(s, {
    licenses: LICENSES,
    products: [
      { slug: 'notes', name: 'Field Notes' },
      { slug: 'atlas', name: 'Atlas Pro' },
    ],
    advance: (ms) => clock.advance(ms),
  })
  s.close()
}

function stats(ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b)
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!.toFixed(1)
  return `first ${ms[0]!.toFixed(1)} ms, p50 ${at(0.5)} ms, p95 ${at(0.95)} ms`
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-lists-'))
const t0 = performance.now()
await seed(dataDir)
console.log(`seeded ${LICENSES} licences in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
const { startDaemon } = await import('../helpers/daemon')
const d = await startDaemon({ dataDir })
try {
  const cases: [string, string][] = [
    ['licences, first page (50)', '/v1/admin/licenses?limit=50'],
    ['licences, search "buyer0421"', '/v1/admin/licenses?limit=50&q=buyer0421'],
    ['licences, sorted by email asc', '/v1/admin/licenses?limit=50&sort=buyer_email&order=asc'],
    ['licences, page 100', '/v1/admin/licenses?limit=50&offset=4950'],
    ['invoices, first page (50)', '/v1/admin/invoices?limit=50'],
    ['subscriptions, first page (50)', '/v1/admin/subscriptions?limit=50'],
    ['audit, first page (50)', '/v1/admin/audit?limit=50'],
    ['machines, first page (50)', '/v1/admin/machines?limit=50'],
  ]
  for (const [label, url] of cases) {
    const times: number[] = []
    for (let i = 0; i < RUNS; i++) {
      const start = performance.now()
      const res = await d.admin(url)
      await res.arrayBuffer()
      if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`)
      times.push(performance.now() - start)
    }
    console.log(`${label.padEnd(34)} ${stats(times)}`)
  }
  const start = performance.now()
  const out = (await (await d.admin('/v1/admin/export/licenses')).json()) as { rows: number; csv: string }
  console.log(
    `${'licences CSV export'.padEnd(34)} ${(performance.now() - start).toFixed(0)} ms, ${out.rows} rows, ${(out.csv.length / 1e6).toFixed(1)} MB`,
  )
} finally {
  await d.stop()
  fs.rmSync(dataDir, { recursive: true, force: true })
}
