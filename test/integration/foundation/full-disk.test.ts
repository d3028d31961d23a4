import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { createCore, type Core } from '../../../src-main/compose'
import { loadConfig } from '../../../src-main/config/load'
import { startHttpServer, type RunningServer } from '../../../src-main/http/listen'
import { createLogger, MemorySink, Redactor } from '../../../src-main/lib/logger'
import { failWritesOf } from '../../helpers/fullDisk'

const ADMIN = 'full-disk-admin-token-0123456789'

/** A full DATA_DIR (issue 33 #6), simulated for the state files: writes answer 507 and login still works. */
describe('a full DATA_DIR', () => {
  let core: Core
  let http: RunningServer
  const sink = new MemorySink()
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-fulldisk-'))

  beforeAll(async () => {
    const config = loadConfig({
      env: { DATA_DIR: dataDir, PORT: '0', BIND: '127.0.0.1', ADMIN_TOKEN: ADMIN, RATE_SOURCES: 'http://127.0.0.1:9' },
    })
    core = await createCore({ config, logger: createLogger({ redactor: new Redactor(), sink }) })
    await core.start()
    http = await startHttpServer(core, { port: 0, host: '127.0.0.1' }, { rendererDir: null })
  })
  afterEach(() => {
    vi.restoreAllMocks()
  })
  afterAll(async () => {
    await http?.close()
    await core?.stop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  const temps = (): string[] => fs.readdirSync(dataDir).filter((f) => f.endsWith('.tmp'))

  it('answers a settings save 507 naming DATA_DIR and the settings, and leaves no temp file', async () => {
    failWritesOf(['settings.json'])
    const res = await fetch(`${http.url}/api/settings`, {
      method: 'PUT',
      headers: { Authorization: `Bearer ${ADMIN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ values: { LLM_PORT: '8001' } }),
    })
    expect(res.status).toBe(507)
    expect(await res.json()).toEqual({
      code: 'insufficient_storage',
      detail: `no space left on the volume holding ${dataDir}: could not write the settings`,
    })
    expect(temps()).toEqual([])
  })

  it('logs in from memory when sessions.json cannot be written, and says so once', async () => {
    failWritesOf(['sessions.json'])
    const login = async (): Promise<string> => {
      const res = await fetch(`${http.url}/api/login`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ token: ADMIN }),
      })
      expect(res.status).toBe(200)
      return (res.headers.get('set-cookie') ?? '').split(';')[0] ?? ''
    }
    const cookies = [await login(), await login()]
    for (const cookie of cookies) {
      const session = await fetch(`${http.url}/api/session`, { headers: { Cookie: cookie } })
      expect(await session.json()).toEqual({ authenticated: true })
    }
    expect(sink.lines.filter((l) => l.includes('sessions are kept in memory'))).toHaveLength(1)
    expect(temps()).toEqual([])
  })

  it('reports the free space of DATA_DIR in /api/health', async () => {
    const res = await fetch(`${http.url}/api/health`)
    const body = (await res.json()) as { components: { storage: { state: string } } }
    // The real volume: ok or degraded depends on the machine; the unit tests fix the figures.
    expect(['ok', 'degraded']).toContain(body.components.storage.state)
  })
})
