/**
 * The desktop window's IPC wire: channel names and message shapes shared by the main-process
 * adapter, the preload and the renderer. Everything that crosses is plain data, because Electron
 * copies it with the structured clone algorithm (an Error would lose its `code` and `status`).
 */
export const IPC_CHANNELS = {
  invoke: 'tandem:invoke',
  cancel: 'tandem:cancel',
  subscribe: 'tandem:subscribe',
  unsubscribe: 'tandem:unsubscribe',
  event: 'tandem:event',
} as const

export interface IpcErrorBody {
  code: string
  message: string
  status: number
}

/** A call's answer: its value, or the error the HTTP client would have seen. */
export type IpcEnvelope<T = unknown> = { ok: true; value: T } | { ok: false; error: IpcErrorBody }

export type IpcStreamMessage =
  { kind: 'event'; data: unknown } | { kind: 'error'; error: IpcErrorBody } | { kind: 'end' }

/** What the preload exposes as `window.tandem`: contract calls and stream subscriptions, nothing else. */
export interface TandemBridge {
  /** Resolves with the envelope, never rejects: errors stay data across the bridge. */
  invoke(method: string, input: unknown, callId?: string): Promise<IpcEnvelope>
  /** Aborts the call started with this id (its handler's signal fires). */
  cancel(callId: string): void
  subscribe(method: string, input: unknown, onMessage: (msg: IpcStreamMessage) => void): () => void
}

/** Call and subscription ids: short, printable, chosen by the renderer. */
export const IPC_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/
