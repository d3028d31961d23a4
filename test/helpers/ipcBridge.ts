/**
 * Stand-ins for Electron's IPC and contextBridge that copy every value the way Electron does:
 * with the structured clone algorithm (Node's `structuredClone`), so an Error loses its custom
 * properties (`code`, `status`) on the way, exactly as in the real window. Functions passed
 * across the context bridge become proxies whose arguments and results are cloned in turn.
 */
import type { IpcEventLike } from '../../src-main/desktop/ipcAdapter'

type Fn = (...args: unknown[]) => unknown

function cloneValue(v: unknown): unknown {
  if (typeof v === 'function') return proxyFunction(v as Fn)
  return structuredClone(v)
}

function proxyFunction(fn: Fn): Fn {
  return (...args: unknown[]) => {
    let out: unknown
    try {
      out = fn(...args.map(cloneValue))
    } catch (err) {
      throw structuredClone(err)
    }
    if (out instanceof Promise)
      return out.then(cloneValue, (err: unknown) => {
        throw structuredClone(err)
      })
    return cloneValue(out)
  }
}

/** What `contextBridge.exposeInMainWorld` makes of an API object in the page's world. */
export function exposeLikeContextBridge<T extends object>(api: T): T {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(api)) out[k] = cloneValue(v)
  return out as T
}

type Listener = (event: IpcEventLike, ...args: unknown[]) => void
type RendererListener = (event: unknown, ...args: unknown[]) => void
type InvokeHandler = (event: IpcEventLike, ...args: unknown[]) => unknown

/** A fake web contents as the main process sees the window. */
export interface FakeSender {
  readonly id: number
  isDestroyed(): boolean
  send(channel: string, ...args: unknown[]): void
  once(event: 'destroyed', fn: () => void): void
  destroy(): void
}

/**
 * One window's IPC: an `ipcMain` and an `ipcRenderer` joined by structured clone on every hop.
 * `senderUrl` is the page the main process sees the calls come from.
 */
export function ipcPair(senderUrl = 'file:///app/out/renderer/index.html') {
  const handlers = new Map<string, InvokeHandler>()
  const mainListeners = new Map<string, Listener[]>()
  const rendererListeners = new Map<string, RendererListener[]>()
  const onDestroyed: (() => void)[] = []
  let destroyed = false
  const sender: FakeSender = {
    id: 1,
    isDestroyed: () => destroyed,
    send: (channel, ...args) => {
      const copied = args.map((a) => structuredClone(a))
      for (const l of rendererListeners.get(channel) ?? []) l({}, ...copied)
    },
    once: (_event, fn) => void onDestroyed.push(fn),
    destroy: () => {
      destroyed = true
      for (const fn of onDestroyed.splice(0)) fn()
    },
  }
  const event = (): IpcEventLike => ({ sender, senderFrame: { url: senderUrl } })
  const ipcMain = {
    handle: (channel: string, fn: InvokeHandler) => void handlers.set(channel, fn),
    removeHandler: (channel: string) => void handlers.delete(channel),
    on: (channel: string, fn: Listener) => void mainListeners.set(channel, [...(mainListeners.get(channel) ?? []), fn]),
    removeListener: (channel: string, fn: Listener) =>
      void mainListeners.set(
        channel,
        (mainListeners.get(channel) ?? []).filter((l) => l !== fn),
      ),
  }
  const ipcRenderer = {
    invoke: async (channel: string, ...args: unknown[]): Promise<unknown> => {
      const fn = handlers.get(channel)
      if (!fn) throw new Error(`No handler registered for '${channel}'`)
      return structuredClone(await fn(event(), ...args.map((a) => structuredClone(a))))
    },
    send: (channel: string, ...args: unknown[]): void => {
      const copied = args.map((a) => structuredClone(a))
      for (const l of mainListeners.get(channel) ?? []) l(event(), ...copied)
    },
    on: (channel: string, fn: RendererListener): void => {
      rendererListeners.set(channel, [...(rendererListeners.get(channel) ?? []), fn])
    },
  }
  return { ipcMain, ipcRenderer, sender, handlers, mainListeners }
}
