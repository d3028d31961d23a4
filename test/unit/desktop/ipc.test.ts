import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { loadConfig } from '../../../src-main/config/load'
import { createCore, type Core } from '../../../src-main/compose'
import type { AnyHandler } from '../../../src-main/app/invoke'
import { IPC_CHANNELS, type IpcEnvelope, type IpcStreamMessage } from '../../../src-main/contract/ipcWire'
import { createIpcAdapter } from '../../../src-main/desktop/ipcAdapter'
import { createBridge } from '../../../src-preload/bridge'
import { ipcApi } from '../../../src-renderer/api/ipcApi'
import { exposeLikeContextBridge, ipcPair } from '../../helpers/ipcBridge'

let core: Core
let dataDir: string
const disposers: (() => void)[] = []

// A getStatus that waits until its caller goes away, to watch cancellation reach the handler.
let statusCalls: { signal: AbortSignal; aborted: Promise<void> }[] = []
const slowStatus: AnyHandler = (_input, ctx) => {
  const aborted = new Promise<void>((r) => ctx.signal.addEventListener('abort', () => r(), { once: true }))
  statusCalls.push({ signal: ctx.signal, aborted })
  return aborted.then(() => {
    throw new Error('stopped')
  })
}

/** An adapter over a real core (getStatus swapped for the slow one) and a window joined to it. */
function window(url?: string) {
  const pair = ipcPair(url)
  const dispatcher = { ...core.dispatcher, handlers: { ...core.dispatcher.handlers, getStatus: slowStatus } }
  disposers.push(createIpcAdapter({ dispatcher, logger: core.logger }, pair.ipcMain))
  const invoke = (...args: unknown[]) => pair.ipcRenderer.invoke(IPC_CHANNELS.invoke, ...args) as Promise<IpcEnvelope>
  const messages = new Map<string, IpcStreamMessage[]>()
  pair.ipcRenderer.on(IPC_CHANNELS.event, (_e, id, msg) =>
    messages.set(id as string, [...(messages.get(id as string) ?? []), msg as IpcStreamMessage]),
  )
  const subscribe = (id: string, method: string, input: unknown) =>
    pair.ipcRenderer.send(IPC_CHANNELS.subscribe, id, method, input)
  return { pair, invoke, subscribe, messages }
}

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-ipc-'))
  const config = loadConfig({ env: { DATA_DIR: dataDir, RATE_SOURCES: 'http://127.0.0.1:9', MONITOR_INTERVAL_S: '0' } })
  core = await createCore({ config })
})
afterAll(async () => {
  for (const d of disposers) d()
  await core.stop()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

describe('IPC adapter', () => {
  it('serves contract methods with the same parsing as HTTP, answering plain envelopes', async () => {
    const w = window()
    expect(await w.invoke('health', {})).toMatchObject({ ok: true, value: { ok: true } })
    expect(await w.invoke('getJob', { id: 'nope' })).toEqual({
      ok: false,
      error: { code: 'not_found', message: 'no job nope', status: 404 },
    })
  })

  it('treats the window as the operator: session is authenticated without a token', async () => {
    expect(await window().invoke('session', {})).toEqual({ ok: true, value: { authenticated: true } })
  })

  it('refuses HTTP-only methods, unknown methods and untrusted senders', async () => {
    const w = window()
    expect(await w.invoke('login', { token: 'x' })).toMatchObject({ ok: false, error: { status: 404 } })
    expect(await w.invoke('noSuchMethod', {})).toMatchObject({ ok: false, error: { code: 'not_found' } })
    const foreign = window('https://evil.example/')
    expect(await foreign.invoke('getConfig', {})).toMatchObject({ ok: false, error: { code: 'forbidden' } })
  })

  it('refuses HTTP-only methods on subscribe too', async () => {
    const w = window()
    w.subscribe('sub-http', 'logout', {})
    await vi.waitFor(() => expect(w.messages.get('sub-http')).toHaveLength(1))
    expect(w.messages.get('sub-http')?.[0]).toEqual({
      kind: 'error',
      error: { code: 'not_found', message: 'logout is HTTP-only', status: 404 },
    })
  })

  it('cancels a call by id: the handler’s signal aborts and the caller gets `aborted`', async () => {
    statusCalls = []
    const w = window()
    const api = ipcApi(exposeLikeContextBridge(createBridge(w.pair.ipcRenderer)))
    const controller = new AbortController()
    const call = api.call('getStatus', {}, { signal: controller.signal }).catch((e: unknown) => e)
    await vi.waitFor(() => expect(statusCalls).toHaveLength(1))
    expect(statusCalls[0]!.signal.aborted).toBe(false)
    controller.abort()
    await statusCalls[0]!.aborted
    expect(await call).toMatchObject({ code: 'aborted', status: 0 })
  })

  it('aborts a window’s open calls when the window goes away', async () => {
    statusCalls = []
    const w = window()
    void w.invoke('getStatus', {}, 'c1')
    await vi.waitFor(() => expect(statusCalls).toHaveLength(1))
    w.pair.sender.destroy()
    await statusCalls[0]!.aborted
    expect(statusCalls[0]!.signal.aborted).toBe(true)
  })

  it('streams a job over the event channel and ends it', async () => {
    const w = window()
    const rec = core.jobs.start('update', 'launcher', async (job) => {
      job.phase('Pulling')
      job.log('Already up to date.')
    })
    await core.jobs.wait(rec.id)
    w.subscribe('sub-1', 'streamJob', { id: rec.id })
    await vi.waitFor(() => expect(w.messages.get('sub-1')?.at(-1)?.kind).toBe('end'))
    const kinds = w.messages.get('sub-1')!.map((m) => (m.kind === 'event' ? (m.data as { type: string }).type : m.kind))
    expect(kinds).toEqual(['phase', 'log', 'end', 'end'])
  })

  it('sends an error message for a stream that cannot open', async () => {
    const w = window()
    w.subscribe('sub-2', 'streamJob', { id: 'missing' })
    await vi.waitFor(() => expect(w.messages.get('sub-2')).toHaveLength(1))
    expect(w.messages.get('sub-2')?.[0]).toMatchObject({ kind: 'error', error: { code: 'not_found' } })
  })
})
