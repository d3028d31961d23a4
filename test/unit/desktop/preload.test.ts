import { describe, expect, it, vi } from 'vitest'
import { IPC_CHANNELS } from '../../../src-main/contract/ipcWire'
import { createBridge, type IpcRendererLike } from '../../../src-preload/bridge'

const fake = vi.hoisted(() => ({ exposed: new Map<string, unknown>() }))
vi.mock('electron', () => ({
  contextBridge: { exposeInMainWorld: (k: string, v: unknown) => fake.exposed.set(k, v) },
  ipcRenderer: { invoke: async () => ({ ok: true, value: 1 }), send: () => undefined, on: () => undefined },
}))

function fakeIpc(answer: unknown | (() => Promise<unknown>)) {
  const sent: unknown[][] = []
  let onEvent: ((e: unknown, ...args: unknown[]) => void) | null = null
  const ipc: IpcRendererLike = {
    invoke: async (...args) => {
      sent.push(['invoke', ...args])
      return typeof answer === 'function' ? (answer as () => Promise<unknown>)() : answer
    },
    send: (...args) => void sent.push(args),
    on: (_ch, fn) => (onEvent = fn),
  }
  return { ipc, sent, emit: (id: string, msg: unknown) => onEvent?.({}, id, msg) }
}

describe('preload bridge', () => {
  it('exposes window.tandem with invoke, cancel and subscribe only', async () => {
    await import('../../../src-preload/index')
    expect([...fake.exposed.keys()]).toEqual(['tandem'])
    expect(Object.keys(fake.exposed.get('tandem') as object).sort()).toEqual(['cancel', 'invoke', 'subscribe'])
  })

  it('passes the envelope through as plain data, with the call id', async () => {
    const err = { ok: false, error: { code: 'conflict', message: 'a download job is already running', status: 409 } }
    const f = fakeIpc(err)
    const bridge = createBridge(f.ipc)
    expect(await bridge.invoke('x', { a: 1 }, 'c7')).toEqual(err)
    expect(f.sent[0]).toEqual(['invoke', IPC_CHANNELS.invoke, 'x', { a: 1 }, 'c7'])
    bridge.cancel('c7')
    expect(f.sent.at(-1)).toEqual([IPC_CHANNELS.cancel, 'c7'])
  })

  it('turns a failed IPC call or a malformed answer into an internal envelope instead of throwing', async () => {
    const broken = createBridge(fakeIpc(() => Promise.reject(new Error("No handler registered for 'x'"))).ipc)
    expect(await broken.invoke('x', {})).toEqual({
      ok: false,
      error: { code: 'internal', message: "No handler registered for 'x'", status: 500 },
    })
    expect(await createBridge(fakeIpc('nonsense').ipc).invoke('x', {})).toMatchObject({
      ok: false,
      error: { code: 'internal' },
    })
  })

  it('routes stream messages to their subscriber and unsubscribes', () => {
    const f = fakeIpc(null)
    const bridge = createBridge(f.ipc)
    const got: unknown[] = []
    const close = bridge.subscribe('streamJob', { id: 'j' }, (m) => got.push(m))
    const [, id] = f.sent.at(-1) as [string, string]
    f.emit(id, { kind: 'event', data: { type: 'log' } })
    f.emit('someone-else', { kind: 'event', data: {} })
    expect(got).toEqual([{ kind: 'event', data: { type: 'log' } }])
    close()
    expect(f.sent.at(-1)).toEqual([IPC_CHANNELS.unsubscribe, id])
  })
})
