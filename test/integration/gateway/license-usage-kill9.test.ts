import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KEY_USAGE_FLUSH_MS } from '../../../src-main/gateway/keys/keyUsage'
import { builtDaemonEnv, waitForListening } from '../../helpers/builtDaemon'
import { startFakeLlm, type FakeLlm } from '../../sim/http'

/**
 * Issue 45: a license key's usage survives a kill -9 of the built headless daemon (out/main, which
 * `npm test` builds first) during steady use. At most the last batch (one flush interval) is lost,
 * and nothing is ever counted twice: what the next daemon reads is never more than the answers'
 * own usage said, and at least what they said up to one interval (plus a margin) before the kill.
 */
const root = path.resolve(__dirname, '../../..')
const bundle = path.join(root, 'out/main/index.js')
const TOKEN = 'kill9-usage-admin-token-0123456789'
const MODEL = 'sim/Qwen3-8B-Instruct'
const children: ChildProcess[] = []
let llm: FakeLlm
let dataDir: string

beforeAll(async () => {
  llm = await startFakeLlm()
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-usage-kill9-'))
})
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL')
  await llm?.close()
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
})

async function daemon(): Promise<{ child: ChildProcess; url: string }> {
  const env = await builtDaemonEnv(dataDir, TOKEN, {
    NODE1_HOST: '127.0.0.1',
    NODE1_USER: 'sim',
    LLM_PORT: String(llm.port),
    RATE_SOURCES: 'http://127.0.0.1:9',
  })
  const child = spawn(process.execPath, [bundle, '--headless'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] })
  children.push(child)
  const url = await waitForListening(child)
  return { child, url }
}

async function admin<T>(url: string, p: string, body: unknown): Promise<T> {
  const res = await fetch(`${url}${p}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  expect(res.status, p).toBe(200)
  return (await res.json()) as T
}

describe('a kill -9 during steady use of a license key', () => {
  it('loses at most the last batch of usage and never counts any twice', async () => {
    expect(fs.existsSync(bundle)).toBe(true)
    const first = await daemon()
    const product = await admin<{ id: string }>(first.url, '/v1/admin/products', {
      slug: 'api',
      name: 'API',
      price_value: 1,
    })
    const tier = await admin<{ id: string }>(first.url, `/v1/admin/products/${product.id}/policies`, {
      slug: 'api',
      name: 'API',
      access: { tokens_per_period: 1e12 },
    })
    const { gateway_key: secret } = await admin<{ gateway_key: string }>(first.url, '/v1/admin/licenses', {
      product_id: product.id,
      policy_id: tier.id,
    })

    // Chats one after another for a little over one flush interval, noting when each answer's usage came.
    const answered: { at: number; tokens: number }[] = []
    const until = Date.now() + KEY_USAGE_FLUSH_MS + 2500
    while (Date.now() < until) {
      const res = await fetch(`${first.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
        body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'count these words please' }] }),
      })
      expect(res.status).toBe(200)
      const body = (await res.json()) as { usage: { prompt_tokens: number; completion_tokens: number } }
      answered.push({ at: Date.now(), tokens: body.usage.prompt_tokens + body.usage.completion_tokens })
    }
    const killedAt = Date.now()
    const dead = new Promise((r) => first.child.once('exit', r))
    first.child.kill('SIGKILL')
    await dead

    const second = await daemon()
    const res = await fetch(`${second.url}/v1/usage`, { headers: { authorization: `Bearer ${secret}` } })
    expect(res.status).toBe(200)
    const used = ((await res.json()) as { tokens: { used: number } }).tokens.used
    const sent = answered.reduce((n, a) => n + a.tokens, 0)
    // A batch is written every interval; one interval and a second of margin before the kill is on disk.
    const surely = answered.filter((a) => a.at < killedAt - KEY_USAGE_FLUSH_MS - 1000).reduce((n, a) => n + a.tokens, 0)
    expect(surely).toBeGreaterThan(0)
    expect(used).toBeLessThanOrEqual(sent)
    expect(used).toBeGreaterThanOrEqual(surely)
    second.child.kill('SIGTERM')
  }, 60_000)
})
