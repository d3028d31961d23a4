import type { IncomingMessage } from 'node:http'
import { describe, expect, it } from 'vitest'
import { isLanAddress } from '../../../src-main/lib/netAddress'
import { clientAddressResolver } from '../../../src-main/http/clientAddress'

/**
 * Issue 45, "safe on the internet": while a tier sells access, a consumer request without a key is
 * admitted only from the local network. The classifier is one function; these are its ranges.
 */
describe('the local network, as the gateway sees it', () => {
  it.each([
    ['127.0.0.1'],
    ['127.255.255.254'],
    ['10.0.0.1'],
    ['10.255.255.255'],
    ['172.16.0.1'],
    ['172.31.255.255'],
    ['192.168.1.20'],
    ['169.254.10.1'],
    ['100.64.0.1'], // CGNAT, Tailscale's addresses
    ['100.127.255.254'],
    ['::1'],
    ['0:0:0:0:0:0:0:1'],
    ['fd00::1'],
    ['fc12:3456::9'],
    ['fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
    ['fe80::1'],
    ['fe80::1%eth0'],
    ['febf::1'],
    ['::ffff:127.0.0.1'],
    ['::ffff:192.168.0.3'],
    ['::ffff:7f00:1'], // the same loopback, in hex
    ['::FFFF:10.1.2.3'],
    ['0:0:0:0:0:ffff:a00:1'],
    ['::ffff:100.100.1.1'],
  ])('%s is on the LAN', (ip) => {
    expect(isLanAddress(ip)).toBe(true)
  })

  it.each([
    ['203.0.113.7'],
    ['198.51.100.1'],
    ['192.0.2.1'],
    ['8.8.8.8'],
    ['1.1.1.1'],
    ['11.0.0.1'],
    ['9.255.255.255'],
    ['172.15.255.255'],
    ['172.32.0.0'],
    ['192.167.1.1'],
    ['192.169.0.1'],
    ['169.253.1.1'],
    ['100.63.255.255'],
    ['100.128.0.0'],
    ['0.0.0.0'],
    ['255.255.255.255'],
    ['::'],
    ['::2'],
    ['2001:db8::1'],
    ['2606:4700::1111'],
    ['fec0::1'], // site-local, deprecated: not fe80::/10
    ['fe00::1'],
    ['fb00::1'],
    ['::ffff:203.0.113.7'],
    ['::ffff:cb00:7107'],
    ['::127.0.0.1'], // IPv4-compatible (deprecated) is not the mapped form
    ['64:ff9b::a00:1'], // NAT64 of 10.0.0.1: reaches Tandem from outside
    ['2002:a00:1::1'], // 6to4 of 10.0.0.1
    ['unknown'],
    [''],
    ['localhost'],
    ['10.0.0.1/8'],
    ['10.0.0.256'],
  ])('%s is not', (ip) => {
    expect(isLanAddress(ip)).toBe(false)
  })
})

const req = (peer: string, headers: Record<string, string> = {}) =>
  ({ socket: { remoteAddress: peer }, headers }) as unknown as IncomingMessage

describe('whether a request came from the LAN, after the trusted-proxy rule', () => {
  it('judges the forwarded client behind a trusted proxy, not the proxy', () => {
    const resolve = clientAddressResolver(['127.0.0.1'])
    expect(resolve(req('127.0.0.1', { 'x-forwarded-for': '203.0.113.7' })).onLan).toBe(false)
    expect(resolve(req('127.0.0.1', { 'x-forwarded-for': '192.168.1.20' })).onLan).toBe(true)
    // A client cannot claim the LAN by naming a LAN address to the left of what the proxy saw.
    expect(resolve(req('127.0.0.1', { 'x-forwarded-for': '10.0.0.1, 203.0.113.7' })).onLan).toBe(false)
    expect(resolve(req('127.0.0.1')).onLan).toBe(true)
    // Tandem reads X-Forwarded-For only: a client named in `Forwarded` alone is not known to be on the LAN.
    expect(resolve(req('127.0.0.1', { forwarded: 'for=192.168.1.20' })).onLan).toBe(false)
  })

  it('counts a request forwarded by a peer outside TRUSTED_PROXIES as from outside', () => {
    // A proxy on the same host that nobody listed: every client behind it would look like loopback.
    expect(clientAddressResolver([])(req('127.0.0.1', { 'x-forwarded-for': '203.0.113.7' })).onLan).toBe(false)
    expect(clientAddressResolver([])(req('::1', { forwarded: 'for=203.0.113.7' })).onLan).toBe(false)
    expect(clientAddressResolver([])(req('192.168.1.20')).onLan).toBe(true)
    expect(clientAddressResolver([])(req('203.0.113.7')).onLan).toBe(false)
    expect(clientAddressResolver([])(req('')).onLan).toBe(false)
  })
})
