import net from 'node:net'

/**
 * IP addresses as rate limits and proxy trust see them: IPv4-mapped IPv6 is the IPv4 address it
 * carries, and an IPv6 client is one /64 (a home or an office), since a single host usually owns
 * a whole /64 and could otherwise rotate through it to dodge a per-address limit.
 */

/** `::ffff:10.0.0.1` → `10.0.0.1`; anything else unchanged. */
export function unmapIpv4(ip: string): string {
  const m = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip)
  return m ? (m[1] as string) : ip
}

/** The eight groups of an IPv6 address, fully expanded (zone dropped), or null when `ip` is not IPv6. */
function ipv6Groups(ip: string): string[] | null {
  if (!net.isIPv6(ip)) return null
  const zoneless = ip.split('%')[0] as string
  // An embedded IPv4 tail (`::ffff:1.2.3.4`) is two groups.
  const groups = (s: string | undefined): string[] =>
    s === undefined || s === ''
      ? []
      : s.split(':').flatMap((g) => {
          if (!g.includes('.')) return [g]
          const [a = 0, b = 0, c = 0, d = 0] = g.split('.').map(Number)
          return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)]
        })
  const [head, tail] = zoneless.includes('::') ? zoneless.split('::') : [zoneless, undefined]
  const h = groups(head)
  const t = groups(tail)
  const all = tail === undefined ? h : [...h, ...Array<string>(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t]
  return all.map((g) => (parseInt(g, 16) || 0).toString(16))
}

/** The key a per-address limit counts under: the IPv4 address, or the IPv6 /64. */
export function limitKeyOf(ip: string): string {
  const plain = unmapIpv4(ip)
  const groups = ipv6Groups(plain)
  return groups === null ? plain : `${groups.slice(0, 4).join(':')}::/64`
}

/**
 * The key the open-connection cap counts under: the IPv4 address, or the whole IPv6 address. Not
 * the /64 of the rate limits: a home LAN is one /64, so one device holding its connections would
 * shut every other IPv6 client of the LAN out (issue 33 #4). Holding a connection costs the
 * client a socket too, and the header timeout closes one that sends nothing.
 */
export function connectionKeyOf(ip: string): string {
  const plain = unmapIpv4(ip)
  return ipv6Groups(plain)?.join(':') ?? plain
}

/** `10.0.0.1`, `10.0.0.0/8`, `fd00::1`, `fd00::/8`. */
export function isAddressOrCidr(text: string): boolean {
  const [addr, bits, extra] = text.split('/')
  if (extra !== undefined || addr === undefined) return false
  const family = net.isIP(addr)
  if (family === 0) return false
  if (bits === undefined) return true
  if (!/^\d{1,3}$/.test(bits)) return false
  return Number(bits) <= (family === 4 ? 32 : 128)
}

/**
 * One hop of X-Forwarded-For (or a Forwarded `for=`) as the address it names: proxies may add a
 * port (`9.9.9.5:1234`, `[2001:db8::1]:443`) or quotes; `unknown`, obfuscated names (`_hidden`)
 * and anything else that is no address are null, never some other address.
 */
export function forwardedAddress(hop: string): string | null {
  const text = hop.trim().replace(/^"(.*)"$/, '$1')
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(text)
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(text)
  const ip = unmapIpv4(bracketed?.[1] ?? v4WithPort?.[1] ?? text)
  return net.isIP(ip) === 0 ? null : ip
}

/** Unique local IPv6 (fc00::/7): private by definition, so trusting all of it trusts no stranger. */
const UNIQUE_LOCAL = new net.BlockList()
UNIQUE_LOCAL.addSubnet('fc00::', 7, 'ipv6')

/**
 * The local network: loopback, the RFC 1918 blocks, link-local, CGNAT (100.64.0.0/10: Tailscale's
 * addresses, and a carrier's NAT is not reachable from the internet either), IPv6 loopback, unique
 * local (fc00::/7) and link-local (fe80::/10). Node's BlockList matches the IPv4-mapped IPv6
 * spellings of the IPv4 blocks (`::ffff:10.0.0.1`, `::ffff:a00:1`) too.
 */
const LAN = new net.BlockList()
for (const [addr, bits] of [
  ['127.0.0.0', 8],
  ['10.0.0.0', 8],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['169.254.0.0', 16],
  ['100.64.0.0', 10],
] as const)
  LAN.addSubnet(addr, bits, 'ipv4')
LAN.addAddress('::1', 'ipv6')
LAN.addSubnet('fc00::', 7, 'ipv6')
LAN.addSubnet('fe80::', 10, 'ipv6')

/** Whether `ip` is on the local network (see LAN); anything that is not an address is not. */
export function isLanAddress(ip: string): boolean {
  const family = net.isIP(ip)
  if (family === 0) return false
  return LAN.check(ip, family === 4 ? 'ipv4' : 'ipv6')
}

/**
 * Why a TRUSTED_PROXIES entry trusts far more than a proxy, or null when it does not. Trusting an
 * address lets it name any client, so a range that holds strangers lets anyone forge their
 * address past every per-address limit. The floor is the largest private block of each family:
 * IPv4 /8 (10.0.0.0/8); IPv6 /16, or all of fc00::/7 (unique local, the IPv6 private space);
 * IPv4-mapped IPv6 (::ffff:0:0/96) counts as the IPv4 range it maps.
 */
export function trustTooBroad(entry: string): string | null {
  const [addr, bitsText] = entry.trim().split('/')
  if (addr === undefined || bitsText === undefined || !isAddressOrCidr(entry.trim())) return null
  const bits = Number(bitsText)
  const mapped = /^::ffff:/i.test(addr) && net.isIPv6(addr)
  const family = net.isIP(addr)
  const v4Bits = family === 4 ? bits : mapped ? bits - 96 : null
  if (v4Bits !== null)
    return v4Bits < 8 ? `${entry.trim()} trusts every IPv4 address or nearly (the floor is /8)` : null
  if (bits >= 16 || (bits >= 7 && UNIQUE_LOCAL.check(addr, 'ipv6'))) return null
  return `${entry.trim()} trusts every IPv6 address or nearly (the floor is /16, or fc00::/7 for unique local addresses)`
}

/** A matcher for a list of addresses and CIDRs (entries that do not parse are ignored). */
export function addressMatcher(entries: readonly string[]): (ip: string) => boolean {
  const list = new net.BlockList()
  let any = false
  for (const raw of entries) {
    const entry = raw.trim()
    if (!isAddressOrCidr(entry)) continue
    const [addr, bits] = entry.split('/') as [string, string | undefined]
    const type = net.isIP(addr) === 4 ? 'ipv4' : 'ipv6'
    if (bits === undefined) list.addAddress(addr, type)
    else list.addSubnet(addr, Number(bits), type)
    any = true
  }
  if (!any) return () => false
  return (ip) => {
    const plain = unmapIpv4(ip)
    const family = net.isIP(plain)
    if (family === 0) return false
    return list.check(plain, family === 4 ? 'ipv4' : 'ipv6')
  }
}
