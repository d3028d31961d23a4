import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'

describe('settings names through the real daemon', () => {
  let d: TestDaemon
  beforeAll(async () => {
    d = await startDaemon()
  })
  afterAll(async () => d?.stop())

  for (const key of ['__proto__', 'constructor', 'toString']) {
    it(`PUT /api/settings with the key ${key} answers 400 naming it`, async () => {
      const res = await d.admin('/api/settings', {
        method: 'PUT',
        body: `{"values": {${JSON.stringify(key)}: "x"}}`,
      })
      expect(res.status).toBe(400)
      const body = (await res.json()) as { detail: string; code: string }
      expect(body.code).toBe('bad_input')
      expect(body.detail).toContain(key)
      expect(fs.existsSync(path.join(d.dataDir, 'settings.json'))).toBe(false)
    })
  }
})

describe('a daemon on a DATA_DIR with a garbage licensing database', () => {
  let d: TestDaemon
  let dataDir: string
  const garbage = Buffer.from('this is not an SQLite database, just garbage bytes '.repeat(200))

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-degraded-'))
    fs.writeFileSync(path.join(dataDir, 'licensing.sqlite'), garbage)
    d = await startDaemon({ dataDir })
  })
  afterAll(async () => {
    await d?.stop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('starts, and /api/health reports licensing degraded with the reason', async () => {
    const res = await fetch(`${d.url}/api/health`)
    expect(res.status).toBe(200)
    const body = (await res.json()) as {
      ok: boolean
      components: { licensing: { state: string; reason: string | null } }
    }
    expect(body.ok).toBe(true)
    expect(body.components.licensing.state).toBe('degraded')
    expect(body.components.licensing.reason).toMatch(/licensing\.sqlite.*not a database/)
  })

  it('licensing routes answer 503 with the reason; public, admin, webhooks and pages alike', async () => {
    const pub = await fetch(`${d.url}/v1/pubkey`)
    expect(pub.status).toBe(503)
    expect(await pub.json()).toMatchObject({
      ok: false,
      error: 'unavailable',
      message: expect.stringMatching(/not a database/),
    })
    const admin = await d.admin('/v1/admin/products')
    expect(admin.status).toBe(503)
    const adminBody = (await admin.json()) as { detail: string }
    expect(adminBody.detail).toMatch(/restore .*licensing\.sqlite.* from a backup/i)
    expect(adminBody.detail).toMatch(/move it aside/i)
    const hook = await fetch(`${d.url}/v1/btcpay/webhook`, { method: 'POST', body: '{}' })
    expect(hook.status).toBe(503)
    const page = await fetch(`${d.url}/buy/some-product`)
    expect(page.status).toBe(503)
  })

  it('the rest of Tandem runs: cluster control and the gateway answer', async () => {
    expect((await d.admin('/api/hardware')).status).toBe(200)
    expect((await d.admin('/api/connectivity')).status).toBe(200)
    const models = await fetch(`${d.url}/v1/models`)
    expect(models.status).not.toBe(503)
    expect((await fetch(`${d.url}/scrub`, { method: 'POST', body: '{"text":"mail a@b.example"}' })).status).toBe(200)
  })

  it('leaves the database file as it was, for the operator to restore or move aside', () => {
    expect(fs.readFileSync(path.join(dataDir, 'licensing.sqlite')).equals(garbage)).toBe(true)
  })
})

describe('a healthy daemon', () => {
  it('reports licensing ok in /api/health', async () => {
    const d = await startDaemon()
    try {
      const body = (await (await fetch(`${d.url}/api/health`)).json()) as {
        components: { licensing: { state: string; reason: string | null } }
      }
      expect(body.components.licensing).toEqual({ state: 'ok', reason: null, remedy: null })
    } finally {
      await d.stop()
    }
  })
})

describe('API views never show a password inside a configured URL', () => {
  let d: TestDaemon
  beforeAll(async () => {
    d = await startDaemon({
      env: {
        PUBLIC_URL: 'https://tandem:pub-Secret1@tandem.example',
        CHAT_UI_URL: 'http://chat:chat-Secret2@chat.lan:3000',
        EMBEDDINGS_URL: 'http://emb:emb-Secret3@127.0.0.1:9/v1',
        RATE_SOURCES: 'http://rates:rate-Secret4@127.0.0.1:9',
      },
    })
  })
  afterAll(async () => d?.stop())
  const secrets = /pub-Secret1|chat-Secret2|emb-Secret3|rate-Secret4|hook-Secret5/

  it('getConfig (settings view, chat and public URL) masks them', async () => {
    const text = await (await d.admin('/api/config')).text()
    expect(text).not.toMatch(secrets)
    expect(text).toContain('https://tandem:***@tandem.example')
    expect(text).toContain('http://chat:***@chat.lan:3000')
  })

  it('the gateway view and the rate sources view mask them', async () => {
    const gw = await (await d.admin('/api/gateway')).text()
    expect(gw).not.toMatch(secrets)
    expect(gw).toContain('https://tandem:***@tandem.example')
    const rates = await d.admin('/v1/admin/rates')
    expect(rates.status).toBe(200)
    const ratesText = await rates.text()
    expect(ratesText).not.toMatch(secrets)
    expect(ratesText).toContain('http://rates:***@127.0.0.1:9')
  })

  it('webhook endpoints, their audit entries and the log mask them', async () => {
    const created = await d.admin('/v1/admin/webhook-endpoints', {
      method: 'POST',
      body: JSON.stringify({ url: 'https://hook:hook-Secret5@127.0.0.1:9/in', secret: 'x'.repeat(20) }),
    })
    expect(created.status).toBe(200)
    expect(await created.text()).not.toMatch(secrets)
    expect(await (await d.admin('/v1/admin/webhook-endpoints')).text()).not.toMatch(secrets)
    expect(await (await d.admin('/v1/admin/audit')).text()).not.toMatch(secrets)
    expect(d.logs.lines.join('\n')).not.toMatch(secrets)
  })
})

describe('orphaned temp files of interrupted writes', () => {
  it('are removed when the daemon starts, only those of the atomic-write pattern', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-orphans-'))
    fs.mkdirSync(path.join(dataDir, 'ssh'))
    const orphans = [
      path.join(dataDir, '.connectivity.json.0123456789ab.tmp'),
      path.join(dataDir, 'ssh', '.id_ed25519.abcdefabcdef.tmp'),
    ]
    const keep = [path.join(dataDir, 'notes.tmp'), path.join(dataDir, '.settings.json.bak')]
    for (const f of [...orphans, ...keep]) fs.writeFileSync(f, 'half-written')
    const d = await startDaemon({ dataDir })
    try {
      for (const f of orphans) expect(fs.existsSync(f)).toBe(false)
      for (const f of keep) expect(fs.existsSync(f)).toBe(true)
      expect(d.logs.lines.filter((l) => l.includes('temp file of an interrupted write'))).toHaveLength(2)
    } finally {
      await d.stop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe('a licensing database whose migration fails', () => {
  it('degrades licensing only, with the failure as the reason', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-migfail-'))
    const Database = (await import('better-sqlite3')).default
    const { openLicensingDb } = await import('../../../src-main/licensing/db')
    // A licensing database at level 8 (it passes the start checks) that migration 9 cannot apply to.
    const pre = openLicensingDb(path.join(dataDir, 'licensing.sqlite'), { upTo: 8 })
    pre.exec('CREATE TABLE validation_log (something_else TEXT)')
    pre.close()
    const d = await startDaemon({ dataDir })
    try {
      const health = (await (await fetch(`${d.url}/api/health`)).json()) as {
        components: { licensing: { state: string; reason: string } }
      }
      expect(health.components.licensing.state).toBe('degraded')
      expect(health.components.licensing.reason).toMatch(/validation_log already exists/)
      expect((await d.admin('/api/connectivity')).status).toBe(200)
      const pre2 = new Database(path.join(dataDir, 'licensing.sqlite'), { readonly: true })
      expect(pre2.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'validation_daily'").get()).toEqual({
        n: 0,
      })
      expect(pre2.prepare('SELECT max(id) AS id FROM schema_migrations').get()).toEqual({ id: 8 })
      pre2.close()
    } finally {
      await d.stop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
