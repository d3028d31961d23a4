import { describe, expect, it } from 'vitest'
import type { CallContext } from '../../../src-main/contract/define'
import { CallerScope } from '../../../src-main/core/callerScope'
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
