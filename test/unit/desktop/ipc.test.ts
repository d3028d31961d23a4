import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { EventEmitter } from 'node:events'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'

// A stand-in for Electron's ipcMain, so the real adapter runs under plain Node.
const fake = vi.hoisted(() => {
  const handlers = new Map<string, (...args: unknown[]) => unknown>()
  const listeners = new Map<string, (...args: unknown[]) => void>()
  return {
    handlers,
    listeners,
    ipcMain: {
      handle: (ch: string, fn: (...args: unknown[]) => unknown) => handlers.set(ch, fn),
      removeHandler: (ch: string) => handlers.delete(ch),
      on: (ch: string, fn: (...args: unknown[]) => void) => listeners.set(ch, fn),
      removeAllListeners: (ch: string) => listeners.delete(ch),
    },
  }
})
vi.mock('electron', () => ({ ipcMain: fake.ipcMain }))

const { registerIpc } = await import('../../../src-main/desktop/ipc')
const { IPC_CHANNELS } = await import('../../../src-preload/channels')

let d: TestDaemon
let dispose: () => void
beforeAll(async () => {
  d = await startDaemon()
  dispose = registerIpc(d.core)
})
afterAll(async () => {
  dispose()
  await d.stop()
})

const appFrame = { senderFrame: { url: 'file:///app/out/renderer/index.html' } }
const invoke = (method: unknown, input: unknown, event: object = appFrame) =>
  fake.handlers.get(IPC_CHANNELS.invoke)!(event, method, input) as Promise<{
    ok: boolean
    value?: unknown
    error?: { code: string; status: number; message: string }
  }>

describe('IPC adapter', () => {
  it('serves contract methods with the same parsing as HTTP', async () => {
    const res = await invoke('health', {})
    expect(res.ok).toBe(true)
    expect(res.value).toMatchObject({ ok: true })
    const bad = await invoke('getJob', { id: '../etc' })
    expect(bad).toMatchObject({ ok: false, error: { code: 'bad_input', status: 400 } })
    const missing = await invoke('getJob', { id: 'nope' })
    expect(missing).toMatchObject({ ok: false, error: { code: 'not_found', status: 404 } })
  })

  it('treats the window as the operator: session is authenticated without a token', async () => {
    expect((await invoke('session', {})).value).toEqual({ authenticated: true })
  })

  it('refuses HTTP-only methods, unknown methods and untrusted senders', async () => {
    expect(await invoke('login', { token: 'x' })).toMatchObject({ ok: false, error: { status: 404 } })
    expect(await invoke('noSuchMethod', {})).toMatchObject({ ok: false, error: { code: 'not_found' } })
    const foreign = await invoke('getConfig', {}, { senderFrame: { url: 'https://evil.example/' } })
    expect(foreign).toMatchObject({ ok: false, error: { code: 'forbidden' } })
  })

  it('streams a job over the event channel and ends it', async () => {
    const sent: { id: string; msg: { kind: string; data?: { type: string } } }[] = []
    const sender = Object.assign(new EventEmitter(), {
      isDestroyed: () => false,
      send: (_ch: string, id: string, msg: { kind: string }) => sent.push({ id, msg }),
    })
    const rec = d.core.jobs.start('update', 'launcher', async (job) => {
      job.phase('Pulling')
      job.log('Already up to date.')
    })
    await d.core.jobs.wait(rec.id)
    fake.listeners.get(IPC_CHANNELS.subscribe)!({ ...appFrame, sender }, 'sub-1', 'streamJob', { id: rec.id })
    await vi.waitFor(() => expect(sent.at(-1)?.msg.kind).toBe('end'))
    expect(sent.map((s) => s.msg.data?.type ?? s.msg.kind)).toEqual(['phase', 'log', 'end', 'end'])
    expect(sent.every((s) => s.id === 'sub-1')).toBe(true)
  })

  it('sends an error message for a stream that cannot open', async () => {
    const sent: { kind: string; error?: { code: string } }[] = []
    const sender = Object.assign(new EventEmitter(), {
      isDestroyed: () => false,
      send: (_ch: string, _id: string, msg: { kind: string; error?: { code: string } }) => sent.push(msg),
    })
    fake.listeners.get(IPC_CHANNELS.subscribe)!({ ...appFrame, sender }, 'sub-2', 'streamJob', { id: 'missing' })
    await vi.waitFor(() => expect(sent).toHaveLength(1))
    expect(sent[0]).toMatchObject({ kind: 'error', error: { code: 'not_found' } })
  })
})
