import type { IncomingMessage } from 'node:http'
import { describe, expect, it } from 'vitest'
import { addressMatcher, isAddressOrCidr, limitKeyOf } from '../../../src-main/core/netAddress'
import { clientAddressResolver } from '../../../src-main/http/clientAddress'

const req = (peer: string, headers: Record<string, string> = {}, encrypted = false) =>
  ({ socket: { remoteAddress: peer, encrypted }, headers }) as unknown as IncomingMessage

describe('per-address limit keys', () => {
  it('keys IPv4 by address and IPv6 by its /64, whatever the spelling', () => {
    expect(limitKeyOf('192.0.2.7')).toBe('192.0.2.7')
    expect(limitKeyOf('::ffff:192.0.2.7')).toBe('192.0.2.7')
    expect(limitKeyOf('2001:db8:1:2:aaaa::1')).toBe(limitKeyOf('2001:0db8:0001:0002:ffff:ffff:ffff:ffff'))
    expect(limitKeyOf('2001:db8:1:2::1')).not.toBe(limitKeyOf('2001:db8:1:3::1'))
    expect(limitKeyOf('2001:db8::1')).toBe('2001:db8:0:0::/64')
  })

  it('reads addresses and CIDRs, and refuses the rest', () => {
    expect(['10.0.0.1', '10.0.0.0/8', 'fd00::/8', '::1'].every(isAddressOrCidr)).toBe(true)
    expect(['10.0.0.0/33', 'proxy.lan', '10.0.0.0/8/1', ''].some(isAddressOrCidr)).toBe(false)
    const m = addressMatcher(['10.0.0.0/8', 'fd00::/8'])
    expect([m('10.1.2.3'), m('::ffff:10.1.2.3'), m('fd12::1'), m('11.0.0.1'), m('fe80::1')]).toEqual([
      true,
      true,
      true,
      false,
      false,
    ])
  })
})

describe('the client address (trusted-proxy rule)', () => {
  const resolve = clientAddressResolver(['10.0.0.0/8'])

  it('ignores X-Forwarded-* from a peer that is not a trusted proxy', () => {
    const c = resolve(req('192.0.2.9', { 'x-forwarded-for': '198.51.100.1', 'x-forwarded-proto': 'https' }))
    expect(c).toEqual({ ip: '192.0.2.9', limitKey: '192.0.2.9', secure: false })
  })

  it('takes the right-most hop that is not a trusted proxy, so a client cannot forge its address', () => {
    const c = resolve(req('10.0.0.2', { 'x-forwarded-for': '1.1.1.1, 198.51.100.1, 10.0.0.3' }))
    expect(c.ip).toBe('198.51.100.1')
  })

  it('stops at a hop that is not an address, and keys an IPv6 client by its /64', () => {
    expect(resolve(req('10.0.0.2', { 'x-forwarded-for': 'garbage, 10.0.0.5' })).ip).toBe('10.0.0.5')
    expect(resolve(req('10.0.0.2', { 'x-forwarded-for': '2001:db8:1:2::7' })).limitKey).toBe('2001:db8:1:2::/64')
  })

  it('believes X-Forwarded-Proto only from a trusted proxy; TLS to Tandem itself is secure', () => {
    expect(resolve(req('10.0.0.2', { 'x-forwarded-proto': 'https' })).secure).toBe(true)
    expect(resolve(req('10.0.0.2', { 'x-forwarded-proto': 'http' }, true)).secure).toBe(false)
    expect(resolve(req('192.0.2.9', {}, true)).secure).toBe(true)
  })
})
