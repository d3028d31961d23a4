import { EventEmitter } from 'node:events'
import { describe, expect, it } from 'vitest'
import type { CallContext } from '../../../src-main/contract/define'
import { CallerScope } from '../../../src-main/platform/callerScope'
import { AuditLog } from '../../../src-main/licensing/audit'
import { licensingFixture } from './fixture'

const ctx = (over: Partial<CallContext>): CallContext => ({
  via: 'http',
  signal: new AbortController().signal,
  session: { begin() {}, end() {}, authenticated: true },
  ...over,
})

describe('audit log caller', () => {
  it('records the caller of the call in progress, across awaits, for admin and buyer entries only', async () => {
    const f = licensingFixture()
    const scope = new CallerScope()
    const audit = new AuditLog(f.db, f.clock, () => scope.current())
    await scope.run(ctx({ clientIp: '192.0.2.9', userAgent: 'curl/8.5\r\nX-Evil: 1' }), async () => {
      await new Promise((r) => setTimeout(r, 1))
      audit.record({ actor: 'admin', action: 'after.await' })
      audit.record({ actor: 'system', action: 'worker.inside' })
    })
    scope.run(ctx({ via: 'ipc' }), () => audit.record({ actor: 'buyer', action: 'from.window' }))
    scope.run(ctx({ userAgent: 'probe https://ops:hunter2@mirror.example/' }), () =>
      audit.record({ actor: 'admin', action: 'ua.with.password' }),
    )
    audit.record({ actor: 'admin', action: 'outside' })
    const byAction = Object.fromEntries(audit.list({ limit: 10 }).map((e) => [e.action, e]))
    expect(byAction['after.await']).toMatchObject({
      via: 'http',
      client_ip: '192.0.2.9',
      user_agent: 'curl/8.5X-Evil: 1',
    })
    expect(byAction['worker.inside']).toMatchObject({ via: null, client_ip: null, user_agent: null })
    expect(byAction['from.window']).toMatchObject({ via: 'ipc', client_ip: null, user_agent: null })
    expect(byAction['outside']).toMatchObject({ via: null, client_ip: null })
    expect(byAction['ua.with.password']!.user_agent).toContain('mirror.example')
    expect(byAction['ua.with.password']!.user_agent).not.toContain('hunter2')
  })
})

/** Who an entry written after an await in the current context would be recorded as. */
const callerAfterAwait = async (scope: CallerScope): Promise<string | null | undefined> => {
  await Promise.resolve()
  const caller = scope.current()
  return caller === undefined ? undefined : caller.clientIp
}

describe('caller scope', () => {
  it('keeps each caller while calls overlap, and has none once no call is in progress', async () => {
    const f = licensingFixture()
    const scope = new CallerScope()
    const audit = new AuditLog(f.db, f.clock, () => scope.current())
    expect(await callerAfterAwait(scope)).toBeUndefined()
    let releaseFirst!: () => void
    const firstHeld = new Promise<void>((r) => (releaseFirst = r))
    let secondAt!: () => void
    const secondStarted = new Promise<void>((r) => (secondAt = r))
    const seen: (string | null | undefined)[] = []
    const first = scope.run(ctx({ clientIp: '192.0.2.1' }), async () => {
      seen.push(await callerAfterAwait(scope))
      await firstHeld
      audit.record({ actor: 'admin', action: 'first' })
    })
    const second = scope.run(ctx({ clientIp: '192.0.2.2' }), async () => {
      secondAt()
      await first // the first call ends while this one is still in progress
      await new Promise((r) => setTimeout(r, 1))
      audit.record({ actor: 'admin', action: 'second' })
    })
    await secondStarted
    expect(scope.callsInProgress).toBe(2)
    releaseFirst()
    await second
    const byAction = Object.fromEntries(audit.list({ limit: 10 }).map((e) => [e.action, e]))
    expect(byAction['first']).toMatchObject({ client_ip: '192.0.2.1' })
    expect(byAction['second']).toMatchObject({ client_ip: '192.0.2.2' })
    expect(seen).toEqual(['192.0.2.1'])
    await Promise.resolve()
    expect(scope.callsInProgress).toBe(0)
    expect(await callerAfterAwait(scope)).toBeUndefined()
    expect(scope.current()).toBeUndefined()
  })

  it('ends a call whose handler throws at once, or answers a stream', async () => {
    const scope = new CallerScope()
    expect(() =>
      scope.run(ctx({}), () => {
        throw new Error('refused')
      }),
    ).toThrow('refused')
    await expect(scope.run(ctx({}), () => Promise.reject(new Error('later')))).rejects.toThrow('later')
    const items = scope.run(ctx({}), () => [1, 2, 3])
    expect(items).toEqual([1, 2, 3])
    await Promise.resolve()
    expect(scope.callsInProgress).toBe(0)
    expect(await callerAfterAwait(scope)).toBeUndefined()
  })

  it('keeps a route that answers later in its call until its response closes', async () => {
    const f = licensingFixture()
    const scope = new CallerScope()
    const audit = new AuditLog(f.db, f.clock, () => scope.current())
    const res = new EventEmitter()
    let answered!: Promise<void>
    scope.runUntilClosed(ctx({ clientIp: '192.0.2.7', userAgent: 'page' }), res, () => {
      // An Express handler: it returns at once and answers after an await.
      answered = (async () => {
        await new Promise((r) => setTimeout(r, 1))
        audit.record({ actor: 'buyer', action: 'page.later' })
      })()
    })
    await answered
    expect(scope.callsInProgress).toBe(1)
    res.emit('close')
    expect(scope.callsInProgress).toBe(0)
    expect(await callerAfterAwait(scope)).toBeUndefined()
    expect(audit.list({ limit: 1 })[0]).toMatchObject({
      action: 'page.later',
      client_ip: '192.0.2.7',
      user_agent: 'page',
    })
  })
})
