import { describe, expect, it, vi } from 'vitest'

const fake = vi.hoisted(() => ({
  exposed: new Map<string, unknown>(),
  invokeResult: { ok: true, value: 1 } as unknown,
  sent: [] as unknown[][],
  onEvent: null as null | ((e: unknown, id: string, msg: unknown) => void),
}))
vi.mock('electron', () => ({
  contextBridge: { exposeInMainWorld: (k: string, v: unknown) => fake.exposed.set(k, v) },
  ipcRenderer: {
    invoke: async () => fake.invokeResult,
    send: (...args: unknown[]) => fake.sent.push(args),
    on: (_ch: string, fn: (e: unknown, id: string, msg: unknown) => void) => (fake.onEvent = fn),
  },
}))

await import('../../../src-preload/index')
const bridge = fake.exposed.get('tandem') as {
  invoke(m: string, i: unknown): Promise<unknown>
  subscribe(m: string, i: unknown, cb: (msg: unknown) => void): () => void
}

describe('preload bridge', () => {
  it('exposes window.tandem with invoke and subscribe only', () => {
    expect([...fake.exposed.keys()]).toEqual(['tandem'])
    expect(Object.keys(bridge).sort()).toEqual(['invoke', 'subscribe'])
  })

  it('returns values and turns the error envelope back into an Error with code and status', async () => {
    expect(await bridge.invoke('health', {})).toBe(1)
    fake.invokeResult = {
      ok: false,
      error: { code: 'conflict', message: 'a download job is already running', status: 409 },
    }
    await expect(bridge.invoke('x', {})).rejects.toMatchObject({
      message: 'a download job is already running',
      code: 'conflict',
      status: 409,
    })
  })

  it('routes stream messages to their subscriber and unsubscribes', () => {
    const got: unknown[] = []
    const close = bridge.subscribe('streamJob', { id: 'j' }, (m) => got.push(m))
    const [, id] = fake.sent.at(-1) as [string, string]
    fake.onEvent?.({}, id, { kind: 'event', data: { type: 'log' } })
    fake.onEvent?.({}, 'someone-else', { kind: 'event', data: {} })
    expect(got).toEqual([{ kind: 'event', data: { type: 'log' } }])
    close()
    expect(fake.sent.at(-1)).toEqual(['tandem:unsubscribe', id])
  })
})
