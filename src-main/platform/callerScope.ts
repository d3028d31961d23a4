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
 *
 * Carrying it costs: while the store is enabled, Node runs async hooks for every async resource in
 * the process (each promise, timer, socket write and tick), the gateway's relays included, about
 * 6 % of a relayed request's instructions (docs/gateway-profile.md, eighth pass). So the store is
 * enabled only while a call (or a routed request, `runUntilClosed`) is in progress and disabled
 * when the last one ends. An entry written by work that outlives its call would have no caller
 * then, as if a worker had written it; admin and buyer entries are written before their call answers.
 */
export class CallerScope {
  private readonly store = new AsyncLocalStorage<Caller>()
  private inProgress = 0

  run<T>(ctx: Pick<CallContext, 'via' | 'clientIp' | 'userAgent'>, fn: () => T): T {
    const caller = callerOf(ctx)
    this.inProgress++
    let out: T
    try {
      out = this.store.run(caller, fn)
    } catch (err) {
      this.ended()
      throw err
    }
    // A stream's handler returns its iterable at once: its items come later, outside the call.
    if (out instanceof Promise) out.then(this.ended, this.ended)
    else this.ended()
    return out
  }

  /**
   * Runs `fn` as a call that lasts until `res` closes: a route that answers in its own time rather
   * than through a promise (an Express handler, which returns before it answers).
   */
  runUntilClosed(
    ctx: Pick<CallContext, 'via' | 'clientIp' | 'userAgent'>,
    res: { once(event: 'close', listener: () => void): unknown },
    fn: () => void,
  ): void {
    const caller = callerOf(ctx)
    this.inProgress++
    res.once('close', this.ended)
    this.store.run(caller, fn)
  }

  current(): Caller | undefined {
    return this.store.getStore()
  }

  /** Calls in progress: contract calls whose handler has not settled, routed requests whose response is open. */
  get callsInProgress(): number {
    return this.inProgress
  }

  private readonly ended = (): void => {
    if (--this.inProgress === 0) this.store.disable()
  }
}

function callerOf(ctx: Pick<CallContext, 'via' | 'clientIp' | 'userAgent'>): Caller {
  return { via: ctx.via, clientIp: ctx.clientIp ?? null, userAgent: ctx.userAgent ?? null }
}
