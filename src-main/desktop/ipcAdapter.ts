import type { CallContext } from '../contract/define'
import {
  IPC_CHANNELS,
  IPC_ID_PATTERN,
  type IpcEnvelope,
  type IpcErrorBody,
  type IpcStreamMessage,
} from '../contract/ipcWire'
import type { Dispatcher } from '../app/invoke'
import { invokeMethod, methodDef, openStream, toPublicError } from '../app/invoke'
import type { Logger } from '../lib/logger'
import { ApiError } from '../contract/errors'

/** The window as the main process sees it (Electron's WebContents, or a test's stand-in). */
export interface IpcSenderLike {
  readonly id: number
  isDestroyed(): boolean
  send(channel: string, ...args: unknown[]): void
  once(event: 'destroyed', listener: () => void): unknown
}

export interface IpcEventLike {
  readonly sender: IpcSenderLike
  readonly senderFrame?: { readonly url: string } | null
}

/** The part of Electron's `ipcMain` the adapter uses. */
export interface IpcMainLike {
  handle(channel: string, listener: (event: IpcEventLike, ...args: unknown[]) => unknown): void
  removeHandler(channel: string): void
  on(channel: string, listener: (event: IpcEventLike, ...args: unknown[]) => void): unknown
  removeListener(channel: string, listener: (event: IpcEventLike, ...args: unknown[]) => void): unknown
}

export interface IpcAdapterOptions {
  /** Where the renderer is served from besides file:// (the dev server). */
  rendererUrl?: string
}

const errorBody = (e: ApiError): IpcErrorBody => ({ code: String(e.code), message: e.message, status: e.status })

/**
 * The IPC adapter: the same contract methods as HTTP, for the desktop window, without importing
 * electron (desktop/registerIpc.ts hands it the real `ipcMain`). Answers are `{ok, value | error}` envelopes
 * of plain data; calls carry an id the window can cancel; streams go out on one event channel
 * keyed by subscription id. The window is the operator, so every call is authenticated.
 */
export function createIpcAdapter(
  core: { readonly dispatcher: Dispatcher; readonly logger: Logger },
  ipcMain: IpcMainLike,
  opts: IpcAdapterOptions = {},
): () => void {
  const logger = core.logger.child('ipc')
  // Open calls and streams, keyed by window and id, so closing a window aborts its work.
  const calls = new Map<string, AbortController>()
  const streams = new Map<string, AbortController>()
  const watched = new WeakSet<IpcSenderLike>()

  const trusted = (e: IpcEventLike): boolean => {
    // Only our own app page (file:// or the dev server) may call in.
    const url = e.senderFrame?.url ?? ''
    return url.startsWith('file://') || (opts.rendererUrl !== undefined && url.startsWith(opts.rendererUrl))
  }
  const keyOf = (e: IpcEventLike, id: string): string => `${e.sender.id}:${id}`

  const track = (e: IpcEventLike, map: Map<string, AbortController>, id: string): AbortController => {
    if (!watched.has(e.sender)) {
      watched.add(e.sender)
      const prefix = `${e.sender.id}:`
      e.sender.once('destroyed', () => {
        for (const m of [calls, streams]) {
          for (const [key, a] of m) {
            if (!key.startsWith(prefix)) continue
            a.abort()
            m.delete(key)
          }
        }
      })
    }
    const abort = new AbortController()
    map.set(keyOf(e, id), abort)
    return abort
  }

  /** The method, if the window may call it (HTTP-only ones it may not). */
  const callable = (method: unknown): string => {
    if (typeof method !== 'string') throw new ApiError('bad_input', 'method must be a string')
    if (methodDef(method).httpOnly) throw new ApiError('not_found', `${method} is HTTP-only`)
    return method
  }

  const invoke = async (e: IpcEventLike, method: unknown, input: unknown, callId: unknown): Promise<IpcEnvelope> => {
    if (!trusted(e)) return { ok: false, error: { code: 'forbidden', message: 'untrusted sender', status: 403 } }
    const id = typeof callId === 'string' && IPC_ID_PATTERN.test(callId) ? callId : null
    const abort = id !== null && !calls.has(keyOf(e, id)) ? track(e, calls, id) : new AbortController()
    try {
      const value = await invokeMethod(core.dispatcher, callable(method), input, ipcContext(abort.signal))
      return { ok: true, value }
    } catch (err) {
      // A cancelled call's failure is expected and its answer goes unread: nothing to log.
      if (abort.signal.aborted) return { ok: false, error: { code: 'aborted', message: 'cancelled', status: 0 } }
      return { ok: false, error: errorBody(toPublicError(err, logger)) }
    } finally {
      if (id !== null && calls.get(keyOf(e, id)) === abort) calls.delete(keyOf(e, id))
    }
  }

  const cancel = (e: IpcEventLike, callId: unknown): void => {
    if (!trusted(e) || typeof callId !== 'string') return
    calls.get(keyOf(e, callId))?.abort()
  }

  const subscribe = (e: IpcEventLike, id: unknown, method: unknown, input: unknown): void => {
    if (!trusted(e) || typeof id !== 'string' || !IPC_ID_PATTERN.test(id) || streams.has(keyOf(e, id))) return
    const sender = e.sender
    const send = (msg: IpcStreamMessage): void => {
      if (!sender.isDestroyed()) sender.send(IPC_CHANNELS.event, id, msg)
    }
    const abort = track(e, streams, id)
    void (async () => {
      try {
        for await (const item of openStream(core.dispatcher, callable(method), input, ipcContext(abort.signal)))
          send({ kind: 'event', data: item })
        if (!abort.signal.aborted) send({ kind: 'end' })
      } catch (err) {
        send({ kind: 'error', error: errorBody(toPublicError(err, logger)) })
      } finally {
        if (streams.get(keyOf(e, id)) === abort) streams.delete(keyOf(e, id))
      }
    })()
  }

  const unsubscribe = (e: IpcEventLike, id: unknown): void => {
    if (!trusted(e) || typeof id !== 'string') return
    streams.get(keyOf(e, id))?.abort()
    streams.delete(keyOf(e, id))
  }

  const onInvoke = (e: IpcEventLike, ...args: unknown[]) => invoke(e, args[0], args[1], args[2])
  const onCancel = (e: IpcEventLike, ...args: unknown[]) => cancel(e, args[0])
  const onSubscribe = (e: IpcEventLike, ...args: unknown[]) => subscribe(e, args[0], args[1], args[2])
  const onUnsubscribe = (e: IpcEventLike, ...args: unknown[]) => unsubscribe(e, args[0])
  ipcMain.handle(IPC_CHANNELS.invoke, onInvoke)
  ipcMain.on(IPC_CHANNELS.cancel, onCancel)
  ipcMain.on(IPC_CHANNELS.subscribe, onSubscribe)
  ipcMain.on(IPC_CHANNELS.unsubscribe, onUnsubscribe)

  return () => {
    for (const a of [...calls.values(), ...streams.values()]) a.abort()
    calls.clear()
    streams.clear()
    ipcMain.removeHandler(IPC_CHANNELS.invoke)
    ipcMain.removeListener(IPC_CHANNELS.cancel, onCancel)
    ipcMain.removeListener(IPC_CHANNELS.subscribe, onSubscribe)
    ipcMain.removeListener(IPC_CHANNELS.unsubscribe, onUnsubscribe)
  }
}

function ipcContext(signal: AbortSignal): CallContext {
  return {
    via: 'ipc',
    signal,
    session: { authenticated: true, begin: () => undefined, end: () => undefined },
  }
}
