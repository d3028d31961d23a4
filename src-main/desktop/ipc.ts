import { ipcMain, type IpcMainEvent, type IpcMainInvokeEvent, type WebContents } from 'electron'
import type { CallContext } from '../contract/define'
import type { IpcEnvelope } from '../contract/errors'
import type { Core } from '../core/app'
import { invokeMethod, methodDef, openStream, toPublicError, type AnyHandler } from '../core/invoke'
import { IPC_CHANNELS, type IpcStreamMessage } from '../../src-preload/channels'

/**
 * The IPC adapter: the same contract methods as HTTP, for the desktop window. Errors come back
 * in an envelope the preload turns into an Error; streams go out on one event channel keyed by
 * a subscription id. The window is the operator, so every call is authenticated.
 */
export function registerIpc(core: Core): () => void {
  const handlers = core.handlers as unknown as Record<string, AnyHandler>
  const logger = core.logger.child('ipc')
  const streams = new Map<string, AbortController>()

  const context = (signal: AbortSignal): CallContext => ({
    via: 'ipc',
    signal,
    session: { authenticated: true, begin: () => undefined, end: () => undefined },
  })

  const trusted = (e: IpcMainInvokeEvent | IpcMainEvent): boolean => {
    // Only our own app page (file:// or the dev server) may call in.
    const url = e.senderFrame?.url ?? ''
    return (
      url.startsWith('file://') ||
      (process.env.ELECTRON_RENDERER_URL !== undefined && url.startsWith(process.env.ELECTRON_RENDERER_URL))
    )
  }

  ipcMain.handle(IPC_CHANNELS.invoke, async (e, method: unknown, input: unknown): Promise<IpcEnvelope<unknown>> => {
    if (!trusted(e)) return { ok: false, error: { code: 'forbidden', message: 'untrusted sender', status: 403 } }
    try {
      if (typeof method !== 'string') throw new Error('method must be a string')
      const def = methodDef(method)
      if (def.httpOnly)
        return { ok: false, error: { code: 'not_found', message: `${method} is HTTP-only`, status: 404 } }
      const value = await invokeMethod(handlers, method, input, context(new AbortController().signal), logger)
      return { ok: true, value }
    } catch (err) {
      const pub = toPublicError(err, logger)
      return { ok: false, error: { code: String(pub.code), message: pub.message, status: pub.status } }
    }
  })

  ipcMain.on(IPC_CHANNELS.subscribe, (e, id: unknown, method: unknown, input: unknown) => {
    if (!trusted(e) || typeof id !== 'string' || typeof method !== 'string') return
    const abort = new AbortController()
    streams.set(id, abort)
    const sender: WebContents = e.sender
    const send = (msg: IpcStreamMessage): void => {
      if (!sender.isDestroyed()) sender.send(IPC_CHANNELS.event, id, msg)
    }
    sender.once('destroyed', () => abort.abort())
    void (async () => {
      try {
        for await (const item of openStream(handlers, method, input, context(abort.signal), logger))
          send({ kind: 'event', data: item })
        send({ kind: 'end' })
      } catch (err) {
        const pub = toPublicError(err, logger)
        send({ kind: 'error', error: { code: String(pub.code), message: pub.message, status: pub.status } })
      } finally {
        streams.delete(id)
      }
    })()
  })

  ipcMain.on(IPC_CHANNELS.unsubscribe, (e, id: unknown) => {
    if (!trusted(e) || typeof id !== 'string') return
    streams.get(id)?.abort()
    streams.delete(id)
  })

  return () => {
    for (const a of streams.values()) a.abort()
    streams.clear()
    ipcMain.removeHandler(IPC_CHANNELS.invoke)
    ipcMain.removeAllListeners(IPC_CHANNELS.subscribe)
    ipcMain.removeAllListeners(IPC_CHANNELS.unsubscribe)
  }
}
