import { contextBridge, ipcRenderer } from 'electron'
import { IPC_CHANNELS, type IpcStreamMessage, type TandemBridge, type IpcErrorBody } from './channels'

/** An Error carrying the contract's code and status, rebuilt from the IPC envelope. */
function envelopeError(e: IpcErrorBody): Error {
  return Object.assign(new Error(e.message), { code: e.code, status: e.status })
}

const listeners = new Map<string, (msg: IpcStreamMessage) => void>()
ipcRenderer.on(IPC_CHANNELS.event, (_e, id: string, msg: IpcStreamMessage) => {
  listeners.get(id)?.(msg)
  if (msg.kind !== 'event') listeners.delete(id)
})

let nextId = 0

const bridge: TandemBridge = {
  async invoke(method, input) {
    const res = (await ipcRenderer.invoke(IPC_CHANNELS.invoke, method, input)) as {
      ok: boolean
      value?: unknown
      error?: IpcErrorBody
    }
    if (!res.ok) throw envelopeError(res.error ?? { code: 'internal', message: 'unknown error', status: 500 })
    return res.value
  },
  subscribe(method, input, onMessage) {
    nextId += 1
    const id = `s${nextId}-${Date.now()}`
    listeners.set(id, onMessage)
    ipcRenderer.send(IPC_CHANNELS.subscribe, id, method, input)
    return () => {
      listeners.delete(id)
      ipcRenderer.send(IPC_CHANNELS.unsubscribe, id)
    }
  },
}

contextBridge.exposeInMainWorld('tandem', bridge)
