import fs from 'node:fs'
import net from 'node:net'
import { connectionKeyOf, limitKeyOf, unmapIpv4 } from '../lib/netAddress'

/**
 * What the server's clients may hold of its open files: connections in all, per address, per IPv6
 * /64 (one host usually owns a whole /64), and a reserve kept for the operator. Every connection
 * costs the process a file descriptor, and when they run out nothing else works either (state
 * files, probes, SQLite), so the cap sits well below the process's file limit.
 */
export interface ConnectionCaps {
  /** Open connections in all; the last `operatorReserve` of them only for the operator. 0 = no cap. */
  readonly total: number
  /** Per client address (IPv4, or a whole IPv6 address); 0 = none. */
  readonly perAddress: number
  /** Per IPv6 /64: above a LAN's many devices, far below what a host owning the /64 could open. 0 = none. */
  readonly perIpv6Prefix: number
  /** Connections beyond `total - operatorReserve` serve only the operator (and the open login and health routes). */
  readonly operatorReserve: number
}

/** The process's open-file limit, as Linux reports it; null where it cannot be read. */
export interface FileLimit {
  readonly soft: number
  readonly hard: number | null
}

/**
 * Node raises the soft limit to the hard one itself at start (checked: started under a soft limit
 * of 1024, it reads 20000 of 20000), and offers no call to read or set it: it is read from procfs.
 */
export function readFileLimit(procLimits = '/proc/self/limits'): FileLimit | null {
  let text: string
  try {
    text = fs.readFileSync(procLimits, 'utf8')
  } catch {
    return null
  }
  const m = /^Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/m.exec(text)
  if (!m) return null
  const n = (s: string): number | null => (s === 'unlimited' ? null : Number(s))
  const soft = n(m[1]!)
  return soft === null ? null : { soft, hard: n(m[2]!) }
}

/** Files kept for everything that is not a client connection: a quarter of the limit, at least 256. */
export function totalConnectionsFor(limit: FileLimit | null, fallback = 4096): number {
  if (limit === null) return fallback
  return Math.max(64, limit.soft - Math.max(256, Math.floor(limit.soft / 4)))
}

/** Distinct sources whose refusal is remembered (for one log line each); beyond it, none are logged. */
const REFUSED_SOURCES_KEPT = 10_000

/**
 * Counts open connections and admits or refuses each at accept. A connection taken into the
 * operator's reserve is on probation until its first request shows operator credentials
 * (`verified`); when the reserve is full, the oldest connection still on probation makes room, so
 * sockets that never prove anything cannot keep the operator out.
 */
export class ConnectionBudget {
  private open = 0
  private readonly byAddress = new Map<string, number>()
  private readonly byPrefix = new Map<string, number>()
  /** Reserve connections not yet shown to be the operator's, oldest first, with their release. */
  private readonly probation = new Map<net.Socket, () => void>()
  /** Sources refused and logged, until they are under their cap again. */
  private readonly refused = new Set<string>()

  constructor(
    readonly caps: ConnectionCaps,
    private readonly log: (message: string) => void,
    private readonly unlimitedPeer: (address: string) => boolean = () => false,
  ) {}

  /** Open connections now. */
  get inUse(): number {
    return this.open
  }

  /** Takes a new connection, or destroys it at once; true when it was taken. */
  admit(socket: net.Socket): boolean {
    const address = socket.remoteAddress
    if (address === undefined) {
      socket.destroy()
      return false
    }
    const { perAddress, perIpv6Prefix } = this.caps
    const key = connectionKeyOf(address)
    const prefix = net.isIPv6(unmapIpv4(address)) ? limitKeyOf(address) : null
    if (!this.unlimitedPeer(address)) {
      if (perAddress > 0 && (this.byAddress.get(key) ?? 0) >= perAddress)
        return this.refuse(socket, `address ${key}`, `holds all ${perAddress} connections one address may open`)
      if (prefix !== null && perIpv6Prefix > 0 && (this.byPrefix.get(prefix) ?? 0) >= perIpv6Prefix)
        return this.refuse(socket, `network ${prefix}`, `holds all ${perIpv6Prefix} connections one IPv6 /64 may open`)
    }
    const reserve = this.reserveNeeded()
    if (reserve === null) return this.refuse(socket, 'all clients', this.fullText())
    this.take(socket, key, prefix, reserve)
    return true
  }

  /** Whether a connection is in the reserve and has not shown operator credentials yet. */
  onProbation(socket: net.Socket): boolean {
    return this.probation.has(socket)
  }

  /** Its request carried operator credentials: the connection keeps its reserve place. */
  verified(socket: net.Socket): void {
    this.probation.delete(socket)
  }

  /** False: an ordinary place; true: a reserve place; null: none is left. */
  private reserveNeeded(): boolean | null {
    const { total, operatorReserve } = this.caps
    if (total <= 0 || this.open < total - operatorReserve) {
      this.refused.delete('all clients')
      return false
    }
    if (this.open < total) return true
    // Full: the oldest reserve connection that has not shown credentials gives its place up.
    const oldest = this.probation.entries().next()
    if (oldest.done) return null
    const [socket, release] = oldest.value
    release()
    socket.destroy()
    this.note('all clients', `${this.fullText()}: each new one takes the place of the oldest that showed none`)
    return true
  }

  private take(socket: net.Socket, key: string, prefix: string | null, reserve: boolean): void {
    this.open++
    bump(this.byAddress, key, 1)
    if (prefix !== null) bump(this.byPrefix, prefix, 1)
    this.refused.delete(`address ${key}`)
    if (prefix !== null) this.refused.delete(`network ${prefix}`)
    let released = false
    const release = (): void => {
      if (released) return
      released = true
      this.open--
      bump(this.byAddress, key, -1)
      if (prefix !== null) bump(this.byPrefix, prefix, -1)
      this.probation.delete(socket)
    }
    if (reserve) this.probation.set(socket, release)
    socket.once('close', release)
  }

  private fullText(): string {
    const { total, operatorReserve } = this.caps
    return `the server holds all ${total} connections it takes, the ${operatorReserve} kept for operator credentials included`
  }

  /** Destroys the socket; the first refusal of a source since it was last under its cap is logged. */
  private refuse(socket: net.Socket, source: string, why: string): false {
    socket.destroy()
    this.note(source, why)
    return false
  }

  private note(source: string, why: string): void {
    if (!this.refused.has(source) && this.refused.size < REFUSED_SOURCES_KEPT) {
      this.refused.add(source)
      this.log(`connections refused at accept: ${source} ${why} (logged once until it is under its cap again)`)
    }
  }
}

function bump(counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by
  if (n <= 0) counts.delete(key)
  else counts.set(key, n)
}
