// Issue 45: what a kill -9 of the built headless daemon (out/main: `npm run build` first) during
// steady use of a license key loses of its usage, measured. LANES clients chat on the key for
// SECONDS (plus a random part, so the kill lands anywhere in a flush interval), the daemon is killed
// with SIGKILL, a new one starts on the same data, and GET /v1/usage says what was counted. Printed:
// tokens and requests answered vs counted, the loss as seconds of traffic before the kill against
// the 5 s batch (target: at most one batch, and a second of margin for the write and the event loop), and what was counted twice (target: 0; a request in flight at the
// kill may have been counted without its answer arriving, so up to LANES such are allowed for).
// A clean restart afterwards must read the same again. Prints met / not met, asserts nothing.
// Run: npm run build && npx tsx test/bench/usageKill9.mts
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { KEY_USAGE_FLUSH_MS } from '../../src-main/gateway/keys/keyUsage'
import { builtDaemonEnv, waitForListening } from '../helpers/builtDaemon'
import { startFakeLlm, type FakeLlm } from '../sim/http/index'

const RUNS = Number(process.env.RUNS ?? 3)
const SECONDS = Number(process.env.SECONDS ?? 7)
const LANES = Number(process.env.LANES ?? 4)
const TOKEN = 'bench-usage-kill9-admin-token-0123456789'
const MODEL = 'sim/Qwen3-8B-Instruct'
const bundle = path.resolve('out/main/index.js')
const verdict = (ok: boolean): string => (ok ? 'met' : 'not met')

interface Counted {
  tokens: number
  requests: number
}

async function daemon(dataDir: string, llm: FakeLlm): Promise<{ child: ChildProcess; url: string }> {
  const env = await builtDaemonEnv(dataDir, TOKEN, {
    NODE1_HOST: '127.0.0.1',
    NODE1_USER: 'bench',
    LLM_PORT: String(llm.port),
    RATE_SOURCES: 'http://127.0.0.1:9',
  })
  const child = spawn(process.execPath, [bundle, '--headless'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  return { child, url: await waitForListening(child) }
}

/** SIGTERM, and its exit (the daemon writes its last batch on the way out). */
function stopped(child: ChildProcess): Promise<void> {
  const exited = new Promise<void>((r) => child.once('exit', () => r()))
  child.kill('SIGTERM')
  return exited
}

async function admin(url: string, p: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}${p}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  if (res.status !== 200) throw new Error(`${p} answered ${res.status}: ${await res.text()}`)
  return (await res.json()) as Record<string, unknown>
}

/** A license on a tier selling access with a quota never reached; its gateway key. */
async function licenseKey(url: string): Promise<string> {
  const product = await admin(url, '/v1/admin/products', { slug: 'api', name: 'API', price_value: 1 })
  const tier = await admin(url, `/v1/admin/products/${String(product.id)}/policies`, {
    slug: 'api',
    name: 'API',
    access: { tokens_per_period: 1e12 },
  })
  return String((await admin(url, '/v1/admin/licenses', { product_id: product.id, policy_id: tier.id })).gateway_key)
}

async function counted(url: string, secret: string): Promise<Counted> {
  const res = await fetch(`${url}/v1/usage`, { headers: { authorization: `Bearer ${secret}` } })
  if (res.status !== 200) throw new Error(`/v1/usage answered ${res.status}`)
  const u = (await res.json()) as { tokens: { used: number }; models: { requests: number }[] }
  return { tokens: u.tokens.used, requests: u.models.reduce((n, m) => n + m.requests, 0) }
}

/** LANES clients chatting until `stop` says so; what their answers said and what was in flight then. */
async function drive(url: string, secret: string, stop: Promise<void>) {
  const answered = { tokens: 0, requests: 0, maxTokens: 0, at: [] as number[] }
  let inFlight = 0
  let stopped = false
  void stop.then(() => (stopped = true))
  const lane = async () => {
    while (!stopped) {
      inFlight++
      try {
        const res = await fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
          body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'count these words please' }] }),
        })
        const body = (await res.json()) as { usage?: { prompt_tokens: number; completion_tokens: number } }
        if (res.status === 200 && body.usage) {
          const t = body.usage.prompt_tokens + body.usage.completion_tokens
          answered.tokens += t
          answered.requests++
          answered.maxTokens = Math.max(answered.maxTokens, t)
          answered.at.push(performance.now())
        }
      } catch {
        // The kill: this request's answer never came.
      } finally {
        inFlight--
      }
    }
  }
  const lanes = Array.from({ length: LANES }, lane)
  await stop
  const unanswered = inFlight
  await Promise.all(lanes)
  return { answered, unanswered }
}

async function run(llm: FakeLlm, i: number) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-usage-kill9-'))
  try {
    const first = await daemon(dataDir, llm)
    const secret = await licenseKey(first.url)
    const ms = SECONDS * 1000 + Math.random() * KEY_USAGE_FLUSH_MS
    const t0 = performance.now()
    let killedAt = 0
    const killed = new Promise<void>((resolve) =>
      setTimeout(() => {
        first.child.once('exit', () => resolve())
        killedAt = performance.now()
        first.child.kill('SIGKILL')
      }, ms),
    )
    const { answered, unanswered } = await drive(first.url, secret, killed)
    const seconds = (performance.now() - t0) / 1000
    const second = await daemon(dataDir, llm)
    const after = await counted(second.url, secret)
    await stopped(second.child)
    const third = await daemon(dataDir, llm)
    const again = await counted(third.url, secret)
    await stopped(third.child)
    const perS = answered.requests / seconds
    const lostRequests = Math.max(0, answered.requests - after.requests)
    const lostTokens = Math.max(0, answered.tokens - after.tokens)
    const twice = Math.max(0, after.requests - answered.requests - unanswered)
    const twiceTokens = Math.max(0, after.tokens - answered.tokens - unanswered * answered.maxTokens)
    const row = {
      i,
      seconds,
      perS,
      answered,
      after,
      lostRequests,
      lostTokens,
      // What was counted is the answers up to the last batch written: the loss in time is from the
      // first answer not counted to the kill.
      lostSeconds: lostRequests === 0 ? 0 : (killedAt - answered.at[after.requests]!) / 1000,
      twice,
      twiceTokens,
      stable: again.tokens === after.tokens && again.requests === after.requests,
    }
    console.log(
      `| ${i} | ${seconds.toFixed(1)} s | ${Math.round(perS)}/s | ${answered.requests} / ${answered.tokens} | ` +
        `${after.requests} / ${after.tokens} | ${lostRequests} / ${lostTokens} | ${row.lostSeconds.toFixed(2)} s | ` +
        `${twice} / ${twiceTokens} | ${row.stable ? 'same' : `differs (${again.requests} / ${again.tokens})`} |`,
    )
    return row
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

if (!fs.existsSync(bundle)) throw new Error(`${bundle} is missing: npm run build first`)
console.log(`load average ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} cores; ${LANES} clients, ${RUNS} runs`)
console.log(
  '| run | traffic | answers/s | answered (requests / tokens) | counted after kill -9 | lost | lost as traffic | counted twice | clean restart |',
)
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---|')
const llm = await startFakeLlm()
try {
  const rows = []
  for (let i = 1; i <= RUNS; i++) rows.push(await run(llm, i))
  const worst = Math.max(...rows.map((r) => r.lostSeconds))
  const twice = rows.reduce((n, r) => n + r.twice, 0)
  const twiceTokens = rows.reduce((n, r) => n + r.twiceTokens, 0)
  const batchS = KEY_USAGE_FLUSH_MS / 1000
  console.log(
    `lost at most ${worst.toFixed(2)} s of traffic (target ≤ one batch, ${batchS} s, + 1 s margin): ${verdict(worst <= batchS + 1)}`,
  )
  const none = twice === 0 && twiceTokens === 0 && rows.every((r) => r.stable)
  console.log(`double counted: ${twice} requests, ${twiceTokens} tokens (target 0): ${verdict(none)}`)
} finally {
  await llm.close()
}
