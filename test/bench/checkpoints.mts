// Checkpoint bench (issue 30): how long each validation-log batch holds the event loop, and how
// large the write-ahead log grows, with 10,000 licenses and 600 batches of 128 rows, one every
// 25 ms (5,000 validates a second), in one process. Modes, one per run, as argv[2]:
//   auto  SQLite's own checkpoint on the commit that grows the log past 1,000 pages (what runs);
//   idle  no automatic checkpoint, a PASSIVE one on the main thread once a second instead;
//   none  no checkpoint at all: the floor for the batches, and a log that grows without bound.
// No target; it prints the figures behind the choice in src-main/licensing/db.ts.
// Run: npx tsx test/bench/checkpoints.mts [auto|idle|none]
import fs from 'node:fs'
import { licensingBench } from './lib/licensingBench'

// Dynamic imports, as in licensing.mts: tsx loads these CommonJS-compiled modules' re-exports that way.
const { systemClock } = await import('../../src-main/lib/clock')
const { ValidationLog } = await import('../../src-main/licensing/validationLog')

const mode = process.argv[2] ?? 'auto'
const LICENSES = 10_000
const BATCHES = 600
const GAP_MS = 25

const { dataDir, logger, config, s, product, policy } = await licensingBench('tandem-bench-wal-')
s.db.transaction(() => {
  for (let i = 0; i < LICENSES; i++)
    s.licenses.issuing.issue({ product, policy, source: 'complimentary', buyerEmail: `b${i}@example.com` })
})()
const ids = s.db.prepare('SELECT id FROM licenses').pluck().all() as string[]
s.db.pragma('wal_checkpoint(TRUNCATE)')
if (mode !== 'auto') s.db.pragma('wal_autocheckpoint = 0')

// Batches are written by hand (a batch size no call reaches), so each one can be timed.
const log = new ValidationLog({ db: s.db, clock: systemClock, logger, retentionDays: 0, maxRows: 0, batchSize: 1e9 })
const batches: number[] = []
const checkpoints: number[] = []
let lastCheckpoint = performance.now()
for (let b = 0; b < BATCHES; b++) {
  for (let i = 0; i < 128; i++) {
    const licenseId = ids[Math.floor(Math.random() * ids.length)]!
    log.record({ kind: 'validate', licenseId, keyText: 'k', ok: true, result: 'ok', fingerprintHash: null })
  }
  const t0 = performance.now()
  log.flush()
  batches.push(performance.now() - t0)
  if (mode === 'idle' && performance.now() - lastCheckpoint >= 1000) {
    const c0 = performance.now()
    s.db.pragma('wal_checkpoint(PASSIVE)')
    checkpoints.push(performance.now() - c0)
    lastCheckpoint = performance.now()
  }
  await new Promise((r) => setTimeout(r, GAP_MS))
}

const q = (xs: number[], f: number): string =>
  ([...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(f * xs.length))] ?? NaN).toFixed(1)
const wal = fs.statSync(`${config.paths.licensingDb}-wal`).size / 1024 / 1024
console.log(
  `${mode}: batch ms p50 ${q(batches, 0.5)}, p90 ${q(batches, 0.9)}, p99 ${q(batches, 0.99)}, max ${q(batches, 1)}` +
    (checkpoints.length > 0 ? `; ${checkpoints.length} idle checkpoints, max ${q(checkpoints, 1)} ms` : '') +
    `; log ${wal.toFixed(1)} MB at the end`,
)
s.close()
fs.rmSync(dataDir, { recursive: true, force: true })
