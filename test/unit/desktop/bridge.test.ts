import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src-main/config/load'
import { createCore, type Core } from '../../../src-main/compose'
import { createIpcAdapter } from '../../../src-main/desktop/ipcAdapter'
import { createBridge } from '../../../src-preload/bridge'
import { ipcApi } from '../../../src-renderer/api/ipcApi'
import { BackendError } from '../../../src-renderer/api/backend'
import { exposeLikeContextBridge, ipcPair } from '../../helpers/ipcBridge'

// The whole desktop path with Electron's copying: renderer client → context bridge → preload →
// IPC → adapter → a real core, every hop a structured clone.
let core: Core
let dataDir: string
let dispose: () => void
const pair = ipcPair()
const api = ipcApi(exposeLikeContextBridge(createBridge(pair.ipcRenderer)))

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bridge-'))
  const config = loadConfig({ env: { DATA_DIR: dataDir, RATE_SOURCES: 'http://127.0.0.1:9', MONITOR_INTERVAL_S: '0' } })
  core = await createCore({ config })
  dispose = createIpcAdapter(core, pair.ipcMain)
})
afterAll(async () => {
  dispose()
  await core.stop()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

describe('the desktop bridge under structured clone', () => {
  it('a structured clone drops an Error’s code and status (why errors travel as data)', () => {
    const copy = structuredClone(Object.assign(new Error('x'), { code: 'conflict', status: 409 }))
    expect(copy).not.toHaveProperty('code')
  })

  it('returns values', async () => {
    expect(await api.call('session', {})).toEqual({ authenticated: true })
  })

  it('delivers an error from main as a BackendError with its code and status', async () => {
    const err = await api.call('getJob', { id: 'nope' }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(BackendError)
    expect(err).toMatchObject({ code: 'not_found', status: 404, message: 'no job nope' })
    const bad = await api.call('getJob', { id: '../etc' }).catch((e: unknown) => e)
    expect(bad).toMatchObject({ code: expect.stringMatching(/^(bad_input|not_found)$/) })
    expect((bad as BackendError).status).not.toBe(500)
  })

  it('streams over the event channel, including the push events', async () => {
    const got: unknown[] = []
    let done!: () => void
    const first = new Promise<void>((r) => (done = r))
    const close = api.subscribe(
      'streamEvents',
      {},
      {
        onEvent: (e) => {
          got.push(e)
          done()
        },
      },
    )
    // Wait for the adapter to have opened the stream before publishing.
    while (core.events.listeners === 0) await new Promise((r) => setImmediate(r))
    core.events.publish('connectivity.transition', { at: 1, subject: 'node1', kind: 'transition', state: 'down' })
    await first
    close()
    expect(got[0]).toMatchObject({ name: 'connectivity.transition', data: { subject: 'node1' } })
  })
})
