import type { MethodName } from '../../src-main/contract'
import type { TandemBridge } from '../../src-preload/channels'
import { BackendError, type BackendApi, type InputOf, type OutputOf, type StreamHandlers } from './backend'

/** The desktop implementation over the preload's `window.tandem`. */
export function ipcApi(bridge: TandemBridge): BackendApi {
  const asBackendError = (err: unknown): BackendError => {
    const e = err as { message?: string; code?: string; status?: number }
    return new BackendError(e.message ?? String(err), e.code ?? 'internal', e.status ?? 500)
  }
  return {
    transport: 'ipc',
    async call<M extends MethodName>(method: M, input: InputOf<M>): Promise<OutputOf<M>> {
      try {
        return (await bridge.invoke(method, input ?? {})) as OutputOf<M>
      } catch (err) {
        throw asBackendError(err)
      }
    },
    subscribe<M extends MethodName>(method: M, input: InputOf<M>, h: StreamHandlers<OutputOf<M>>): () => void {
      return bridge.subscribe(method, input ?? {}, (msg) => {
        if (msg.kind === 'event') h.onEvent(msg.data as OutputOf<M>)
        else if (msg.kind === 'end') h.onEnd?.()
        else h.onError?.(new BackendError(msg.error.message, msg.error.code, msg.error.status))
      })
    },
  }
}
