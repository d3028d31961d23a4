import { EventEmitter } from 'node:events'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { describe, expect, it } from 'vitest'
import { Credentials } from '../../../src-main/app/credentials'
import { checkCredentials } from '../../../src-main/http/middleware/credentialCheck'
import { limitKeyOf } from '../../../src-main/lib/netAddress'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { Limits } from '../../../src-main/platform/limits'
import { requestState, type AdminCheck } from '../../../src-main/http/requestState'
import type { Surface } from '../../../src-main/http/surfaces'

/**
 * The credential check on its own: a fixed clock (nothing refills), a session cookie `good`, and
 * one consumer key. Each test speaks from its own address so one lockout does not reach the next.
 */
const ADMIN_TOKEN = 'admin-token-0123456789abcdef'
const clock = { now: () => 1_000_000 }
const credentials = new Credentials({
  adminToken: ADMIN_TOKEN,
  consumerKeys: ['lan-key-one-aaaaaaaa'],
  limits: new Limits({ clock, publicPerMinute: 0 }),
  logger: createLogger({ sink: new MemorySink() }),
})
const cookieSession: AdminCheck = (req) =>
  req.headers.cookie === 'tandem_session=good' || req.headers.authorization === `Bearer ${ADMIN_TOKEN}`

let nextClient = 10
const address = (): string => `198.51.100.${nextClient++}`

function check(surface: Surface, ip: string, headers: Record<string, string>) {
  const req = { headers, url: '/', socket: {} } as unknown as IncomingMessage
  const res = new EventEmitter() as unknown as ServerResponse
  const st = requestState(res)
  st.surface = surface
  st.client = { ip, limitKey: limitKeyOf(ip), secure: false }
  const refused = checkCredentials(credentials, cookieSession, req, res, st)
  return { status: refused?.status ?? 200, consumer: st.consumer }
}

function lockOut(ip: string): void {
  for (let i = 0; i < 6; i++) check('control', ip, { authorization: `Bearer wrong-${i}` })
}

describe('a valid credential is admitted while its address is limited (issue 33 #2)', () => {
  it('admits the session cookie and the admin token on the control API; wrong tokens still get 429', () => {
    const ip = address()
    lockOut(ip)
    expect(check('control', ip, { cookie: 'tandem_session=good' }).status).toBe(200)
    expect(check('control', ip, { authorization: `Bearer ${ADMIN_TOKEN}` }).status).toBe(200)
    expect(check('control', ip, { authorization: 'Bearer wrong-again' }).status).toBe(429)
    expect(check('control', ip, {}).status).toBe(429)
  })

  it('admits a right consumer key and the admin token on the gateway while limited', () => {
    const ip = address()
    lockOut(ip)
    expect(check('consumer', ip, { authorization: 'Bearer lan-key-one-aaaaaaaa' })).toEqual({
      status: 200,
      consumer: { kind: 'legacy' },
    })
    expect(check('consumer', ip, { authorization: `Bearer ${ADMIN_TOKEN}` })).toEqual({
      status: 200,
      consumer: { kind: 'admin' },
    })
    expect(check('consumer', ip, { authorization: 'Bearer nope' }).status).toBe(429)
  })

  it('still spends the limiter on each wrong token: 401 five times, then 429', () => {
    const ip = address()
    const statuses = Array.from(
      { length: 7 },
      (_, i) => check('metrics', ip, { authorization: `Bearer m-${i}` }).status,
    )
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429])
  })
})

describe('the admin session cookie stays on the dashboard (issue 33 #8)', () => {
  it('does not pass the consumer surface with the cookie alone; the admin Bearer still does', () => {
    const ip = address()
    expect(check('consumer', ip, { cookie: 'tandem_session=good' }).status).toBe(401)
    expect(check('consumer', ip, { authorization: `Bearer ${ADMIN_TOKEN}` }).status).toBe(200)
    expect(check('control', ip, { cookie: 'tandem_session=good' }).status).toBe(200)
  })
})
