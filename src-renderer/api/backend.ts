import type { Contract, MethodName } from '../../src-main/contract'
import type { MethodInput, MethodOutput } from '../../src-main/contract/define'

export type InputOf<M extends MethodName> = MethodInput<Contract[M]>
export type OutputOf<M extends MethodName> = MethodOutput<Contract[M]>

/** An error from the backend, with the contract's code and HTTP status. */
export class BackendError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly status: number,
  ) {
    super(message)
    this.name = 'BackendError'
  }
}

/** The code a call gets when its caller cancels it (both transports). */
export const ABORTED = 'aborted'

export interface CallOptions {
  /** Aborting it cancels the call: the request is dropped (HTTP) or its handler's signal fires (IPC). */
  signal?: AbortSignal
}

export interface StreamHandlers<T> {
  onEvent(event: T): void
  onError?(err: BackendError): void
  onEnd?(): void
}

/**
 * The one API the renderer uses. Two implementations: IPC in the desktop window
 * (`window.tandem`), HTTP + EventSource in a browser. Pinia stores only ever call this.
 */
export interface BackendApi {
  readonly transport: 'ipc' | 'http'
  call<M extends MethodName>(method: M, input: InputOf<M>, opts?: CallOptions): Promise<OutputOf<M>>
  /** Opens a stream method; returns a function that closes it. */
  subscribe<M extends MethodName>(method: M, input: InputOf<M>, handlers: StreamHandlers<OutputOf<M>>): () => void
}
