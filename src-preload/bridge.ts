import {
  IPC_CHANNELS,
  type IpcEnvelope,
  type IpcErrorBody,
  type IpcStreamMessage,
  type TandemBridge,
} from '../src-main/contract/ipcWire'

/** The part of Electron's `ipcRenderer` the bridge uses. */
export interface IpcRendererLike {
  invoke(channel: string, ...args: unknown[]): Promise<unknown>
  send(channel: string, ...args: unknown[]): void
  on(channel: string, listener: (event: unknown, ...args: unknown[]) => void): unknown
}

const failure = (message: string): IpcEnvelope => ({
  ok: false,
  error: { code: 'internal', message, status: 500 },
})

function isErrorBody(v: unknown): v is IpcErrorBody {
  const e = v as Partial<IpcErrorBody> | null
  return typeof e === 'object' && e !== null && typeof e.code === 'string' && typeof e.message === 'string'
}

/** An answer from main, checked: anything else becomes an `internal` envelope. */
function asEnvelope(res: unknown): IpcEnvelope {
  const r = res as { ok?: unknown; value?: unknown; error?: unknown } | null
  if (typeof r !== 'object' || r === null) return failure('malformed answer from the main process')
  if (r.ok === true) return { ok: true, value: r.value }
  if (r.ok === false && isErrorBody(r.error))
    return { ok: false, error: { ...r.error, status: typeof r.error.status === 'number' ? r.error.status : 500 } }
  return failure('malformed answer from the main process')
}

/**
 * `window.tandem`: contract calls and stream subscriptions over IPC. Answers stay envelopes of
 * plain data (`{ok, value | error}`), because the context bridge copies values with structured
 * clone and an Error thrown across it loses its `code` and `status`.
 */
export function createBridge(ipc: IpcRendererLike): TandemBridge {
  const listeners = new Map<string, (msg: IpcStreamMessage) => void>()
  ipc.on(IPC_CHANNELS.event, (_e, id, msg) => {
    if (typeof id !== 'string') return
    const m = msg as IpcStreamMessage
    listeners.get(id)?.(m)
    if (m.kind !== 'event') listeners.delete(id)
  })
  let nextId = 0

  return {
    async invoke(method, input, callId) {
      try {
        return asEnvelope(await ipc.invoke(IPC_CHANNELS.invoke, method, input, callId))
      } catch (err) {
        return failure(err instanceof Error ? err.message : String(err))
      }
    },
    cancel(callId) {
      ipc.send(IPC_CHANNELS.cancel, callId)
    },
    subscribe(method, input, onMessage) {
      nextId += 1
      const id = `s${nextId}`
      listeners.set(id, onMessage)
      ipc.send(IPC_CHANNELS.subscribe, id, method, input)
      return () => {
        if (!listeners.delete(id)) return
        ipc.send(IPC_CHANNELS.unsubscribe, id)
      }
    },
  }
}
