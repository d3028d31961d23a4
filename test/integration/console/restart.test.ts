import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { startDaemon, type RunningDaemon } from '../../../src-main/headless'
import { freePort } from '../../bench/lib/child'
import type { PublicConfig } from '../../../src-main/contract/system'

// The real headless daemon: "Restart to apply" rebuilds its services behind the same listener.
describe('Restart to apply', () => {
  let dataDir: string
  let d: RunningDaemon
  let port: number
  const call = (p: string, init: RequestInit = {}) =>
    fetch(d.http.url + p, {
      ...init,
      headers: { Authorization: `Bearer ${d.core.adminToken}`, 'Content-Type': 'application/json' },
    })
  const config = async () => (await (await call('/api/config')).json()) as PublicConfig

  beforeEach(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-restart-'))
    // The listener's settings come from the file, so the page may change them (the environment would lock them).
    port = await freePort()
    fs.writeFileSync(path.join(dataDir, 'settings.json'), JSON.stringify({ PORT: String(port), BIND: '127.0.0.1' }))
    d = await startDaemon({
      env: { DATA_DIR: dataDir, RATE_SOURCES: 'http://127.0.0.1:9', MONITOR_INTERVAL_S: '0' },
    })
  })
  afterEach(async () => {
    await d.stop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('applies a saved setting in-process and names what only a new process applies', async () => {
    const saved = await call('/api/settings', {
      method: 'PUT',
      body: JSON.stringify({ values: { CHAT_UI_URL: 'http://127.0.0.1:3000/chat', PORT: String(port + 1) } }),
    })
    expect(saved.status).toBe(200)
    const before = await config()
    expect(before.chat_ui_url).toBeNull()
    expect(before.settings.find((s) => s.name === 'CHAT_UI_URL')?.pending).toBe('http://127.0.0.1:3000/chat')
    const oldCore = d.core

    // A push-event stream open across the restart ends, so the page reconnects to the new core.
    const events = await call('/api/events')
    expect(events.status).toBe(200)
    const ended = events.text().then(() => 'ended')

    const res = await call('/api/restart', { method: 'POST', body: '{}' })
    expect(res.status).toBe(200)
    const outcome = (await res.json()) as { process_restart_needed: string[]; process_restart_hint: string | null }
    expect(outcome.process_restart_needed).toEqual(['PORT'])
    expect(outcome.process_restart_hint).toContain('PORT')
    expect(await ended).toBe('ended')

    expect(d.core).not.toBe(oldCore)
    const after = await config()
    expect(after.chat_ui_url).toBe('http://127.0.0.1:3000/chat')
    expect(after.settings.find((s) => s.name === 'CHAT_UI_URL')).toMatchObject({ source: 'file', pending: null })
  })

  it('serves the same listener and admin token after a restart', async () => {
    await call('/api/restart', { method: 'POST', body: '{}' })
    expect((await call('/api/health')).status).toBe(200)
    expect((await call('/api/config')).status).toBe(200)
  })

  it('refuses while a job runs, naming it, and keeps the services as they are', async () => {
    let finish!: () => void
    const job = d.core.jobs.start('download', 'Download of org/model', () => new Promise<void>((r) => (finish = r)))
    const oldCore = d.core
    const res = await call('/api/restart', { method: 'POST', body: '{}' })
    expect(res.status).toBe(409)
    expect(((await res.json()) as { detail: string }).detail).toContain(`Download of org/model is running (${job.id})`)
    expect(d.core).toBe(oldCore)
    finish()
    await d.core.jobs.wait(job.id)
    expect((await call('/api/restart', { method: 'POST', body: '{}' })).status).toBe(200)
  })
})
