/** IPC channel names and message shapes shared by the preload and the main-process adapter. */
export const IPC_CHANNELS = {
  invoke: 'tandem:invoke',
  subscribe: 'tandem:subscribe',
  unsubscribe: 'tandem:unsubscribe',
  event: 'tandem:event',
} as const

export interface IpcErrorBody {
  code: string
  message: string
  status: number
}

export type IpcStreamMessage =
  { kind: 'event'; data: unknown } | { kind: 'error'; error: IpcErrorBody } | { kind: 'end' }

/** What the preload exposes as `window.tandem`: contract calls and stream subscriptions, nothing else. */
export interface TandemBridge {
  invoke(method: string, input: unknown): Promise<unknown>
  subscribe(method: string, input: unknown, onMessage: (msg: IpcStreamMessage) => void): () => void
}
