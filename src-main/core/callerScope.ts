import { AsyncLocalStorage } from 'node:async_hooks'
import type { CallContext } from '../contract/define'

/** Who made the contract call that is running: what the audit log records beside an admin or buyer action. */
export interface Caller {
  readonly via: 'http' | 'ipc'
  /** Client address after the trusted-proxy rule; null over IPC. */
  readonly clientIp: string | null
  readonly userAgent: string | null
}

/**
 * The caller of the contract call in progress, carried across its awaits. The pipeline runs each
 * handler inside `run`; services deep below it (the audit log) ask `current` instead of every
 * method passing the caller down. Work started outside a call (workers, timers) has none.
 */
export class CallerScope {
  private readonly store = new AsyncLocalStorage<Caller>()

  run<T>(ctx: Pick<CallContext, 'via' | 'clientIp' | 'userAgent'>, fn: () => T): T {
    return this.store.run({ via: ctx.via, clientIp: ctx.clientIp ?? null, userAgent: ctx.userAgent ?? null }, fn)
  }

  current(): Caller | undefined {
    return this.store.getStore()
  }
}
