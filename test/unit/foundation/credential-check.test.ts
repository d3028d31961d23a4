import { EventEmitter } from 'node:events'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { describe, expect, it } from 'vitest'
import { Credentials } from '../../../src-main/app/credentials'
import { checkCredentials } from '../../../src-main/http/middleware/credentialCheck'
import { isLanAddress, limitKeyOf } from '../../../src-main/lib/netAddress'
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
  st.client = { ip, limitKey: limitKeyOf(ip), secure: false, onLan: isLanAddress(ip) }
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

describe('while a tier sells access, keyless requests from outside the LAN are refused (issue 45)', () => {
  let selling = true
  const shop = new Credentials({
    adminToken: ADMIN_TOKEN,
    consumerKeys: [],
    accessSales: { sellsAccess: () => selling },
    limits: new Limits({ clock, publicPerMinute: 0 }),
    logger: createLogger({ sink: new MemorySink() }),
  })
  function ask(surface: Surface, ip: string, headers: Record<string, string> = {}) {
    const req = { headers, url: '/', socket: {} } as unknown as IncomingMessage
    const res = new EventEmitter() as unknown as ServerResponse
    const st = requestState(res)
    st.surface = surface
    st.client = { ip, limitKey: limitKeyOf(ip), secure: false, onLan: isLanAddress(ip) }
    const refused = checkCredentials(shop, cookieSession, req, res, st)
    return { status: refused?.status ?? 200, message: refused?.message, consumer: st.consumer }
  }

  it('refuses the outside with a 401 that says why, and serves the LAN as before', () => {
    selling = true
    const outside = ask('consumer', '203.0.113.7')
    expect(outside.status).toBe(401)
    expect(outside.message).toMatch(/^this gateway sells access; requests from outside the local network need a key/)
    expect(ask('consumer', '192.168.1.20')).toEqual({ status: 200, message: undefined, consumer: { kind: 'open' } })
    expect(ask('consumer', '100.101.102.103').status).toBe(200)
    // Other surfaces are not the gateway's: the public licensing API stays open to the internet.
    expect(ask('licensing-public', '203.0.113.8').status).toBe(200)
  })

  it('admits the admin token from outside; the session cookie is still no credential on the gateway', () => {
    selling = true
    expect(ask('consumer', '203.0.113.9', { authorization: `Bearer ${ADMIN_TOKEN}` }).consumer).toEqual({
      kind: 'admin',
    })
    expect(ask('consumer', '203.0.113.9', { cookie: 'tandem_session=good' }).status).toBe(401)
  })

  it('counts a wrong key from outside against the address, as anywhere a key is needed', () => {
    selling = true
    const statuses = Array.from(
      { length: 7 },
      (_, i) => ask('consumer', '203.0.113.10', { authorization: `Bearer guess-${i}` }).status,
    )
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429])
  })

  it('leaves the outside open while no tier sells access', () => {
    selling = false
    expect(ask('consumer', '203.0.113.11').status).toBe(200)
  })
})
