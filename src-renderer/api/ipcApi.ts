import type { MethodName } from '../../src-main/contract'
import type { TandemBridge } from '../../src-main/contract/ipcWire'
import {
  ABORTED,
  BackendError,
  type BackendApi,
  type CallOptions,
  type InputOf,
  type OutputOf,
  type StreamHandlers,
} from './backend'

const cancelled = (): BackendError => new BackendError('the call was cancelled', ABORTED, 0)

/** The desktop implementation over the preload's `window.tandem`: envelopes in, BackendError out. */
export function ipcApi(bridge: TandemBridge): BackendApi {
  let nextCall = 0
  return {
    transport: 'ipc',
    async call<M extends MethodName>(method: M, input: InputOf<M>, opts: CallOptions = {}): Promise<OutputOf<M>> {
      const { signal } = opts
      if (signal?.aborted) throw cancelled()
      nextCall += 1
      const callId = `c${nextCall}`
      let onAbort = (): void => undefined
      const aborted = new Promise<never>((_resolve, reject) => {
        onAbort = () => {
          bridge.cancel(callId)
          reject(cancelled())
        }
      })
      signal?.addEventListener('abort', onAbort, { once: true })
      try {
        const answer = bridge.invoke(method, input ?? {}, callId)
        const res = await (signal ? Promise.race([answer, aborted]) : answer)
        if (!res.ok) throw new BackendError(res.error.message, res.error.code, res.error.status)
        return res.value as OutputOf<M>
      } finally {
        signal?.removeEventListener('abort', onAbort)
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
