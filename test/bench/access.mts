// Selling access (issue 45): what a license key's entitlement check adds to a request against a
// plain key, how fast license usage is recorded and written, and, with 1,000 access licenses whose
// keys all have usage, GET /v1/usage's p50/p99 and the p99 of the admin's key list and of
// GET /v1/admin/access (one page each). Printed as met / not met against the targets below;
// loopback only, bounded.
// Run: npx tsx test/bench/access.mts
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ConsumerKeys } from '../../src-main/gateway/keys/consumerKeyStore'
import { KeyUsageStore } from '../../src-main/gateway/keys/keyUsage'
import { openLicensingDb } from '../../src-main/licensing/db'
import { licenseStanding } from '../../src-main/licensing/licenseStanding'
import { createLogger, Redactor } from '../../src-main/lib/logger'
import { systemClock } from '../../src-main/lib/clock'
import { startDaemon } from '../helpers/daemon'
import { startFakeLlm } from '../sim/http/index'

const LICENSES = 1000
const TARGET_ADDED_P99_US = 500
const TARGET_RECORDS_PER_S = 50_000
const TARGET_USAGE_P99_MS = 5
const TARGET_ADMIN_P99_MS = 50

const quantile = (xs: number[], q: number): number => [...xs].sort((a, b) => a - b)[Math.floor(q * (xs.length - 1))]!
const verdict = (ok: boolean): string => (ok ? 'met' : 'not met')

/** A licensing database with LICENSES active licenses on one access tier, and their keys. */
function accessFixture(dir: string) {
  const db = openLicensingDb(path.join(dir, 'licensing.sqlite'))
  const now = Date.now()
  const access = JSON.stringify({
    models: null,
    tokens_per_period: 1e9,
    requests_per_minute: null,
    concurrent_streams: null,
  })
  db.transaction(() => {
    db.prepare(`INSERT INTO products (id, slug, name, created_at, updated_at) VALUES ('p1', 'api', 'API', ?, ?)`).run(
      now,
      now,
    )
    db.prepare(
      `INSERT INTO policies (id, product_id, slug, name, created_at, updated_at, access) VALUES ('t1', 'p1', 'api', 'API', ?, ?, ?)`,
    ).run(now, now, access)
    const lic = db.prepare(
      `INSERT INTO licenses (id, product_id, policy_id, status, source, license_key, issued_at, updated_at)
       VALUES (?, 'p1', 't1', 'active', 'complimentary', 'K', ?, ?)`,
    )
    for (let i = 0; i < LICENSES; i++) lic.run(`l${i}`, now, now)
  })()
  const logger = createLogger({ redactor: new Redactor(), level: 'error' })
  const keys = ConsumerKeys.open(dir, systemClock, logger)
  const licensed = Array.from({ length: LICENSES }, (_, i) => keys.create({ name: `k${i}` }, `l${i}`))
  const plain = keys.create({ name: 'plain' })
  keys.followLicenses(licenseStanding(db, systemClock))
  return { db, keys, licensed, plain }
}

/** Microseconds per admit-and-release, `n` times over `ids` in turn. */
function admitTimes(keys: ConsumerKeys, ids: string[], n: number): number[] {
  const times: number[] = []
  for (let i = 0; i < n; i++) {
    const who = { kind: 'key' as const, id: ids[i % ids.length]!, name: 'k', models: null, licensed: true }
    const t0 = performance.now()
    keys.admit(who)()
    times.push((performance.now() - t0) * 1000)
  }
  return times
}

function checkAndRecord(): void {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-access-'))
  try {
    const { db, keys, licensed, plain } = accessFixture(dir)
    const ids = licensed.map((k) => k.id)
    admitTimes(keys, ids, 5000)
    admitTimes(keys, [plain.id], 5000)
    const lic = admitTimes(keys, ids, 50_000)
    const pl = admitTimes(keys, [plain.id], 50_000)
    const added50 = quantile(lic, 0.5) - quantile(pl, 0.5)
    const added99 = quantile(lic, 0.99) - quantile(pl, 0.99)
    console.log(`Entitlement check, ${LICENSES} access licenses (50,000 admits each):`)
    console.log('| key | p50 µs | p99 µs |')
    console.log('|---|---:|---:|')
    console.log(`| plain key | ${quantile(pl, 0.5).toFixed(1)} | ${quantile(pl, 0.99).toFixed(1)} |`)
    console.log(
      `| license key (standing + quota) | ${quantile(lic, 0.5).toFixed(1)} | ${quantile(lic, 0.99).toFixed(1)} |`,
    )
    console.log(
      `added: p50 ${added50.toFixed(1)} µs, p99 ${added99.toFixed(1)} µs (target p99 ≤ ${TARGET_ADDED_P99_US} µs): ${verdict(added99 <= TARGET_ADDED_P99_US)}`,
    )

    const store = new KeyUsageStore(keys.database!, systemClock, () => keys.licenses.periods?.write())
    const counts = { requests: 1, errors: 0, prompt_tokens: 12, completion_tokens: 80, estimated_completion_tokens: 0 }
    const full = {
      ...counts,
      streams: 1,
      ttft_ms_sum: 40,
      stream_tokens: 79,
      stream_seconds: 2,
      audio_seconds: 0,
      speech_characters: 0,
    }
    const n = 200_000
    const t0 = performance.now()
    for (let i = 0; i < n; i++) {
      const id = ids[i % ids.length]!
      store.record(id, full)
      keys.countPeriod(id, i % 3 === 0 ? 'sim/a' : 'sim/b', full)
    }
    const recordS = (performance.now() - t0) / 1000
    const f0 = performance.now()
    store.flush()
    const flushMs = performance.now() - f0
    const perS = n / recordS
    console.log(
      `Usage recording: ${n.toLocaleString('en')} requests over ${LICENSES} keys in ${recordS.toFixed(2)} s = ${Math.round(perS).toLocaleString('en')}/s (target ≥ ${TARGET_RECORDS_PER_S.toLocaleString('en')}/s): ${verdict(perS >= TARGET_RECORDS_PER_S)}; the batch of ${LICENSES} hourly + ${2 * LICENSES} period rows written in ${flushMs.toFixed(1)} ms`,
    )
    keys.close()
    db.close()
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

/** Milliseconds of each of `n` calls, one after another (each must answer 200). */
async function timed(n: number, call: (i: number) => Promise<Response>): Promise<number[]> {
  const times: number[] = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    const res = await call(i)
    await res.arrayBuffer()
    if (res.status !== 200) throw new Error(`${res.url} answered ${res.status}`)
    times.push(performance.now() - t0)
  }
  return times
}

/** GET /v1/usage over HTTP against a daemon with LICENSES access licenses, each with some usage. */
async function usageEndpoint(): Promise<void> {
  const llm = await startFakeLlm()
  const daemon = await startDaemon({
    env: {
      NODE1_HOST: '127.0.0.1',
      NODE1_USER: 'bench',
      LLM_PORT: String(llm.port),
      RATE_SOURCES: 'http://127.0.0.1:9',
    },
  })
  try {
    const post = async (p: string, body: unknown) =>
      (await (
        await daemon.admin(p, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
      ).json()) as Record<string, unknown>
    const product = await post('/v1/admin/products', { slug: 'api', name: 'API', price_value: 1 })
    const tier = await post(`/v1/admin/products/${String(product.id)}/policies`, {
      slug: 'api',
      name: 'API',
      access: { tokens_per_period: 1e9 },
    })
    const secrets: string[] = []
    for (let i = 0; i < LICENSES; i++)
      secrets.push(
        String((await post('/v1/admin/licenses', { product_id: product.id, policy_id: tier.id })).gateway_key),
      )
    for (const s of secrets) {
      const res = await fetch(`${daemon.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${s}` },
        body: JSON.stringify({ model: 'sim/Qwen3-8B-Instruct', messages: [{ role: 'user', content: 'hi' }] }),
      })
      await res.arrayBuffer()
    }
    const times = await timed(3000, (i) =>
      fetch(`${daemon.url}/v1/usage`, { headers: { authorization: `Bearer ${secrets[(i * 7) % LICENSES]}` } }),
    )
    const p99 = quantile(times, 0.99)
    console.log(
      `GET /v1/usage with ${LICENSES} access licenses, each key with usage (3,000 calls): p50 ${quantile(times, 0.5).toFixed(2)} ms, p99 ${p99.toFixed(2)} ms (target ≤ ${TARGET_USAGE_P99_MS} ms): ${verdict(p99 <= TARGET_USAGE_P99_MS)}`,
    )
    const pages = [
      {
        name: 'admin key list (GET /api/consumer-keys, 100 a page)',
        path: (i: number) => `/api/consumer-keys?limit=100&offset=${(i % 10) * 100}`,
      },
      {
        name: 'GET /v1/admin/access (50 a page)',
        path: (i: number) => `/v1/admin/access?limit=50&offset=${(i % 20) * 50}`,
      },
    ]
    for (const p of pages) {
      const t = await timed(500, (i) => daemon.admin(p.path(i)))
      const q99 = quantile(t, 0.99)
      console.log(
        `${p.name}, ${LICENSES} keys (500 calls): p50 ${quantile(t, 0.5).toFixed(2)} ms, p99 ${q99.toFixed(2)} ms (target ≤ ${TARGET_ADMIN_P99_MS} ms): ${verdict(q99 <= TARGET_ADMIN_P99_MS)}`,
      )
    }
  } finally {
    await daemon.stop()
    await llm.close()
  }
}

console.log(`load average ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} cores`)
checkAndRecord()
await usageEndpoint()
