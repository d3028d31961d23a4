import type { TandemBridge } from '../../src-main/contract/ipcWire'
import type { BackendApi } from './backend'
import { httpApi } from './httpApi'
import { ipcApi } from './ipcApi'

export type { BackendApi, InputOf, OutputOf } from './backend'
export { ABORTED, BackendError } from './backend'
export type { CallOptions } from './backend'

declare global {
  interface Window {
    tandem?: TandemBridge
  }
}

let current: BackendApi | null = null

/** IPC inside the desktop window, HTTP in a browser: chosen once at start-up. */
export function initBackend(onUnauthorized: () => void, override?: BackendApi): BackendApi {
  current = override ?? (window.tandem ? ipcApi(window.tandem) : httpApi(window.location.origin, onUnauthorized))
  return current
}

/** The backend for stores and views. */
export function useApi(): BackendApi {
  if (!current) throw new Error('backend not initialised')
  return current
}
