import { describe, expect, it } from 'vitest'
import { connectionKeyOf, limitKeyOf } from '../../../src-main/lib/netAddress'

describe('the open-connection cap key (issue 33 #4)', () => {
  it('counts two IPv6 hosts of one /64 apart, where the rate limits count them together', () => {
    const laptop = '2001:db8:1:2:aaaa::1'
    const phone = '2001:db8:1:2:bbbb::7'
    expect(limitKeyOf(laptop)).toBe(limitKeyOf(phone))
    expect(connectionKeyOf(laptop)).not.toBe(connectionKeyOf(phone))
  })

  it('is one key per address whatever its spelling, and the IPv4 address for mapped IPv4', () => {
    expect(connectionKeyOf('2001:db8::1')).toBe(connectionKeyOf('2001:0db8:0000:0000:0000:0000:0000:0001'))
    expect(connectionKeyOf('2001:db8::1')).toBe('2001:db8:0:0:0:0:0:1')
    expect(connectionKeyOf('::1')).toBe('0:0:0:0:0:0:0:1')
    expect(connectionKeyOf('fe80::1%eth0')).toBe(connectionKeyOf('fe80::1'))
    expect(connectionKeyOf('64:ff9b::192.0.2.1')).toBe('64:ff9b:0:0:0:0:c000:201')
    expect(connectionKeyOf('::ffff:192.0.2.7')).toBe('192.0.2.7')
    expect(connectionKeyOf('192.0.2.7')).toBe('192.0.2.7')
  })

  it('leaves the rate-limit key as it was', () => {
    expect(limitKeyOf('2001:db8::1')).toBe('2001:db8:0:0::/64')
    expect(limitKeyOf('64:ff9b::192.0.2.1')).toBe('64:ff9b:0:0::/64')
  })
})
