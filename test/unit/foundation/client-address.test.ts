import fs from 'node:fs'
import type { IncomingMessage } from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { addressMatcher, isAddressOrCidr, limitKeyOf } from '../../../src-main/lib/netAddress'
import { clientAddressResolver } from '../../../src-main/http/clientAddress'
import { loadConfig } from '../../../src-main/config/load'

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
    expect(c).toEqual({ ip: '192.0.2.9', limitKey: '192.0.2.9', secure: false, onLan: false })
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

describe('forwarded addresses a proxy writes (issue 33 #8)', () => {
  const resolve = clientAddressResolver(['10.0.0.0/8'])

  it('reads a forwarded address with a port, IPv4 or bracketed IPv6, as that address', () => {
    expect(resolve(req('10.0.0.2', { 'x-forwarded-for': '9.9.9.5:1234' })).ip).toBe('9.9.9.5')
    expect(resolve(req('10.0.0.2', { 'x-forwarded-for': '[2001:db8::1]:443' })).ip).toBe('2001:db8::1')
    expect(resolve(req('10.0.0.2', { 'x-forwarded-for': '"[2001:db8::2]"' })).ip).toBe('2001:db8::2')
    // Two clients behind the proxy stay two buckets, neither of them the proxy's.
    const a = resolve(req('10.0.0.2', { 'x-forwarded-for': '9.9.9.5:1234' })).limitKey
    const b = resolve(req('10.0.0.2', { 'x-forwarded-for': '9.9.9.6:1234' })).limitKey
    expect(new Set([a, b, '10.0.0.2']).size).toBe(3)
  })

  it('ignores unknown, obfuscated and garbage hops rather than falling back to the proxy', () => {
    expect(resolve(req('10.0.0.2', { 'x-forwarded-for': '9.9.9.5, unknown' })).ip).toBe('9.9.9.5')
    expect(resolve(req('10.0.0.2', { 'x-forwarded-for': '9.9.9.5, _hidden, 10.0.0.3' })).ip).toBe('9.9.9.5')
    expect(resolve(req('10.0.0.2', { 'x-forwarded-for': '9.9.9.5, 300.1.1.1:80, [nope]:1' })).ip).toBe('9.9.9.5')
    // Nothing usable at all: the peer is all that is known.
    expect(resolve(req('10.0.0.2', { 'x-forwarded-for': 'unknown' })).ip).toBe('10.0.0.2')
  })

  it('takes the last X-Forwarded-Proto, the one the trusted hop wrote', () => {
    expect(resolve(req('10.0.0.2', { 'x-forwarded-proto': 'http, https' })).secure).toBe(true)
    expect(resolve(req('10.0.0.2', { 'x-forwarded-proto': 'https, http' })).secure).toBe(false)
  })

  it('reports a peer that forwards for others without being trusted, and only that', () => {
    const seen: string[] = []
    const watched = clientAddressResolver(['10.0.0.0/8'], (peer) => seen.push(peer))
    watched(req('192.0.2.9', {}))
    watched(req('10.0.0.2', { 'x-forwarded-for': '198.51.100.1' }))
    watched(req('127.0.0.1', { 'x-forwarded-for': '198.51.100.1' }))
    watched(req('192.0.2.10', { forwarded: 'for=198.51.100.2' }))
    expect(seen).toEqual(['127.0.0.1', '192.0.2.10'])
  })
})

describe('TRUSTED_PROXIES that trust everyone (issue 33 #8)', () => {
  const load = (value: string) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-proxies-'))
    try {
      return loadConfig({ env: { DATA_DIR: dir, TRUSTED_PROXIES: value } })
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }

  it.each(['0.0.0.0/0', '127.0.0.1, ::/0', '0.0.0.0/7', '2000::/3', '::ffff:0:0/96'])(
    'refuses %s with a clear warning and trusts nobody',
    (value) => {
      const c = load(value)
      expect(c.trustedProxies).toEqual([])
      expect(c.warnings.find((w) => w.startsWith('TRUSTED_PROXIES'))).toMatch(/every|too broad/)
    },
  )

  it.each(['127.0.0.1', '10.0.0.0/8', '172.16.0.0/12, fd00::/8', 'fc00::/7', '2001:db8::/32'])(
    'accepts %s',
    (value) => {
      const c = load(value)
      expect(c.warnings).toEqual([])
      expect(c.trustedProxies.length).toBeGreaterThan(0)
    },
  )
})
