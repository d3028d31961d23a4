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

/** The first four groups of an IPv6 address, fully expanded, or null when `ip` is not IPv6. */
function ipv6Prefix64(ip: string): string | null {
  if (!net.isIPv6(ip)) return null
  const zoneless = ip.split('%')[0] as string
  const groups = (s: string | undefined): string[] => (s === undefined || s === '' ? [] : s.split(':'))
  const [head, tail] = zoneless.includes('::') ? zoneless.split('::') : [zoneless, undefined]
  const h = groups(head)
  const t = groups(tail)
  // An embedded IPv4 tail counts as two groups; only the first four groups matter here.
  const missing = 8 - h.length - t.length - t.filter((g) => g.includes('.')).length
  const all = tail === undefined ? h : [...h, ...Array<string>(Math.max(0, missing)).fill('0'), ...t]
  return all
    .slice(0, 4)
    .map((g) => (parseInt(g, 16) || 0).toString(16))
    .join(':')
}

/** The key a per-address limit counts under: the IPv4 address, or the IPv6 /64. */
export function limitKeyOf(ip: string): string {
  const plain = unmapIpv4(ip)
  const prefix = ipv6Prefix64(plain)
  return prefix === null ? plain : `${prefix}::/64`
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
