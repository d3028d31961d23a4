import dgram from 'node:dgram'
import type { Logger } from '../lib/logger'
import { shq } from '../ssh/quote'
import { PROBE_TIMEOUT_MS, type SshPool, type SshTarget } from '../ssh/pool'
import { normalizeMac } from '../contract/schemas'

/** Spec 1, 4.6 and 8. */
export const WOL_PORTS = [9, 7] as const

/** 6 × 0xFF, then the MAC 16 times: 102 bytes. */
export function magicPacket(mac: string): Buffer {
  const norm = normalizeMac(mac)
  if (norm === null) throw new Error(`not a MAC address: ${JSON.stringify(mac)}`)
  const bytes = Buffer.from(norm.replace(/:/g, ''), 'hex')
  const packet = Buffer.alloc(6 + 16 * 6, 0xff)
  for (let i = 0; i < 16; i++) bytes.copy(packet, 6 + i * 6)
  return packet
}

/** Sends the packet from this machine as a UDP broadcast to each port. */
export async function sendBroadcast(
  packet: Buffer,
  address: string,
  ports: readonly number[] = WOL_PORTS,
): Promise<void> {
  const sock = dgram.createSocket('udp4')
  try {
    await new Promise<void>((resolve, reject) => {
      sock.once('error', reject)
      sock.bind(0, () => {
        sock.off('error', reject)
        resolve()
      })
    })
    sock.setBroadcast(true)
    for (const port of ports) {
      await new Promise<void>((resolve, reject) =>
        sock.send(packet, port, address, (err) => (err ? reject(err) : resolve())),
      )
    }
  } finally {
    sock.close()
  }
}

/**
 * The remote side of the relay path: python3 (present on the nodes' OS) sends the packet as a
 * broadcast from the relay node, so it originates on the sleeping node's own LAN segment.
 */
export function relayCommand(packet: Buffer, address: string, ports: readonly number[] = WOL_PORTS): string {
  const script = [
    'import socket, sys',
    'p = bytes.fromhex(sys.argv[1])',
    's = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)',
    's.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)',
    'for port in sys.argv[3].split(","): s.sendto(p, (sys.argv[2], int(port)))',
    'print("sent %d bytes to %s ports %s" % (len(p), sys.argv[2], sys.argv[3]))',
  ].join('\n')
  return `python3 -c ${shq(script)} ${shq(packet.toString('hex'))} ${shq(address)} ${shq(ports.join(','))}`
}

export interface WakeDeps {
  pool: SshPool
  logger: Logger
  broadcastAddress: string
  ports?: readonly number[]
}

export interface WakeOutcome {
  ok: boolean
  via: 'relay' | 'broadcast' | null
  /** The node that sent the packet on the relay path, null otherwise. */
  relay: string | null
  attempts: { via: 'relay' | 'broadcast'; ok: boolean; detail: string }[]
}

/** A node that can send the packet for another: by name, for the answer. */
export interface WakeRelay {
  readonly name: string
  readonly target: SshTarget
}

/** Relays tried before the direct broadcast: bounds the wait when several nodes are down too. */
export const MAX_RELAYS_TRIED = 3

/** Tries the relays in order (the first that answers sends it), then a direct broadcast. */
export async function wake(deps: WakeDeps, mac: string, relays: readonly WakeRelay[]): Promise<WakeOutcome> {
  const packet = magicPacket(mac)
  const ports = deps.ports ?? WOL_PORTS
  const attempts: WakeOutcome['attempts'] = []
  for (const relay of relays.slice(0, MAX_RELAYS_TRIED)) {
    const ok = await sendThrough(deps, relay, relayCommand(packet, deps.broadcastAddress, ports), attempts)
    if (ok) return { ok: true, via: 'relay', relay: relay.name, attempts }
  }
  try {
    await sendBroadcast(packet, deps.broadcastAddress, ports)
    attempts.push({ via: 'broadcast', ok: true, detail: `sent to ${deps.broadcastAddress} ports ${ports.join(', ')}` })
    return { ok: true, via: 'broadcast', relay: null, attempts }
  } catch (err) {
    attempts.push({ via: 'broadcast', ok: false, detail: (err as Error).message })
    deps.logger.warn('wake-on-LAN failed on every path', { attempts })
    return { ok: false, via: null, relay: null, attempts }
  }
}

/** One relay's try, recorded in `attempts`; true when it sent the packet. */
async function sendThrough(
  deps: WakeDeps,
  relay: WakeRelay,
  command: string,
  attempts: WakeOutcome['attempts'],
): Promise<boolean> {
  try {
    const res = await deps.pool.exec(relay.target, command, { timeoutMs: PROBE_TIMEOUT_MS })
    if (res.code === 0) {
      attempts.push({ via: 'relay', ok: true, detail: `${relay.name}: ${res.stdout.trim() || 'sent'}` })
      return true
    }
    const why = `exit ${res.code}: ${res.stderr.trim().slice(0, 300)}`
    attempts.push({ via: 'relay', ok: false, detail: `${relay.name}: ${why}` })
  } catch (err) {
    attempts.push({ via: 'relay', ok: false, detail: `${relay.name}: ${(err as Error).message}` })
  }
  return false
}
