// Validation log cost (issue 12): daemon CPU per /v1/validate call spent on the log, measured in
// one process so the shared machine's load matters less than in the HTTP bench. Interleaved
// rounds of the same calls: the license service without a log, with the log (record + batched
// writes through its own connection, counted in), and the contract pipeline with and without the
// caller scope the audit log reads. Prints µs of CPU per call; no target here: the HTTP figure
// (test/bench/licensing.mts, ≥ 3,000 req/s) is the one that counts.
// Run: npx tsx test/bench/validationLog.mts
import fs from 'node:fs'
import os from 'node:os'
import { licensingBench } from './lib/licensingBench'
import type { AnyHandler, Dispatcher } from '../../src-main/app/invoke'

// Dynamic imports, as in licensing.mts: tsx loads these CommonJS-compiled modules' re-exports that way.
const { CallerScope } = await import('../../src-main/platform/callerScope')
const { systemClock } = await import('../../src-main/lib/clock')
const { invokeMethod } = await import('../../src-main/app/invoke')
const { Limits } = await import('../../src-main/platform/limits')
const { createLicenses } = await import('../../src-main/licensing/licenses')
const { ValidationLog } = await import('../../src-main/licensing/validationLog')
type CallerScope = InstanceType<typeof CallerScope>

const KEYS = 2_000
const CALLS = 40_000
const ROUNDS = 4

const { dataDir, logger, s, product, policy } = await licensingBench('tandem-bench-vlog-')
const keys: string[] = []
s.db.transaction(() => {
  for (let i = 0; i < KEYS; i++) keys.push(s.licenses.issuing.issue({ product, policy, source: 'complimentary' }).key)
})()

const base = {
  db: s.db,
  clock: systemClock,
  audit: s.audit,
  catalog: s.catalog,
  discounts: s.discounts,
  issuer: s.issuer,
}
const plain = createLicenses(base)
const log = new ValidationLog({ db: s.db, clock: systemClock, logger, retentionDays: 90, maxRows: 1_000_000 })
const logged = createLicenses({ ...base, validations: log })
const client = { ip: '127.0.0.1', userAgent: 'bench/1.0' }

/** CPU µs per call of `fn` over CALLS calls (user + system: the batched writes count too). */
async function cpuPerCall(fn: (i: number) => unknown, after?: () => void): Promise<number> {
  const c0 = process.cpuUsage()
  for (let i = 0; i < CALLS; i++) {
    fn(i)
    // Give the log's scheduled batch writes their turn, as the event loop would between requests.
    if (i % 256 === 255) await new Promise((r) => setImmediate(r))
  }
  after?.()
  const c = process.cpuUsage(c0)
  return (c.user + c.system) / CALLS
}

const dispatcher = (callers?: CallerScope): Dispatcher => ({
  handlers: {
    licValidate: (async (input: never) => plain.validation.validate(input, client)) as unknown as AnyHandler,
  },
  limits: new Limits({ clock: systemClock, publicPerMinute: 0 }),
  logger,
  callers,
})
const ctx = {
  via: 'http' as const,
  clientIp: '127.0.0.1',
  userAgent: 'bench/1.0',
  signal: new AbortController().signal,
  session: { begin() {}, end() {}, authenticated: false },
}
async function pipelinePerCall(d: Dispatcher): Promise<number> {
  const c0 = process.cpuUsage()
  for (let i = 0; i < CALLS; i++) await invokeMethod(d, 'licValidate', { key: keys[i % KEYS]! }, ctx)
  const c = process.cpuUsage(c0)
  return (c.user + c.system) / CALLS
}

// Warm-up: every key's signature verified and cached once.
for (const k of keys) plain.validation.validate({ key: k })
const results: Record<string, number[]> = { without: [], with: [], pipe: [], pipeScope: [] }
for (let r = 0; r < ROUNDS; r++) {
  results.without!.push(await cpuPerCall((i) => plain.validation.validate({ key: keys[i % KEYS]! }, client)))
  results.with!.push(
    await cpuPerCall(
      (i) => logged.validation.validate({ key: keys[i % KEYS]! }, client),
      () => log.flush(),
    ),
  )
  results.pipe!.push(await pipelinePerCall(dispatcher()))
  results.pipeScope!.push(await pipelinePerCall(dispatcher(new CallerScope())))
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const rows = (db: typeof s.db) => (db.prepare('SELECT count(*) AS n FROM validation_log').get() as { n: number }).n
console.log(`\nvalidation log cost, ${CALLS} validate calls per round over ${KEYS} keys, ${ROUNDS} interleaved rounds`)
console.log(
  `load average at the start: ${os.loadavg()[0]!.toFixed(2)} (other work on the machine inflates every figure)`,
)
console.log('| run | CPU µs/call, each round | median |')
console.log('|---|---|---:|')
const line = (name: string, xs: number[]) =>
  console.log(`| ${name} | ${xs.map((x) => x.toFixed(1)).join(', ')} | ${median(xs).toFixed(1)} |`)
line('license service validate, no log', results.without!)
line('license service validate, validation log on (batches written)', results.with!)
line('contract pipeline → validate, no caller scope', results.pipe!)
line('contract pipeline → validate, caller scope (audit caller)', results.pipeScope!)
console.log(`validation log rows written: ${rows(s.db)} (expected ${CALLS * ROUNDS})`)
log.close()
s.close()
fs.rmSync(dataDir, { recursive: true, force: true })
