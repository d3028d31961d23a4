import { z } from 'zod'
import { atomicWriteFile, readStateFile } from '../core/files'
import { fingerprintOfBlob } from './keys'

/**
 * Trust-on-first-use host keys, kept in `DATA_DIR/known_hosts.json`. The first key a host presents
 * is stored; a different key later is refused until the operator forgets the old one.
 */
const Entry = z.object({ type: z.string(), key: z.string(), fingerprint: z.string(), added_at: z.number() })
const FileShape = z.object({ version: z.literal(1), hosts: z.record(z.string(), Entry) })
export type HostKeyEntry = z.infer<typeof Entry>

export type HostKeyCheck =
  { ok: true; firstUse: boolean; fingerprint: string } | { ok: false; expected: string; presented: string }

export class HostKeyStore {
  private hosts: Record<string, HostKeyEntry>

  constructor(
    private readonly file: string,
    private readonly now: () => number,
    warn: (msg: string) => void = () => {},
  ) {
    const res = readStateFile(file, (text) => FileShape.parse(JSON.parse(text)))
    if (res.kind === 'ok') this.hosts = res.value.hosts
    else {
      if (res.kind === 'corrupt')
        warn(`known hosts file unreadable (${res.error}); ${res.keptAs ? `kept as ${res.keptAs}; ` : ''}starting empty`)
      this.hosts = {}
    }
  }

  static entryName(host: string, port: number): string {
    return `[${host}]:${port}`
  }

  /** Checks a presented key blob; stores it on first use. Synchronous: ssh2 calls it mid-handshake. */
  check(host: string, port: number, blob: Buffer): HostKeyCheck {
    const name = HostKeyStore.entryName(host, port)
    const presented = fingerprintOfBlob(blob)
    const known = this.hosts[name]
    if (known) {
      return known.key === blob.toString('base64')
        ? { ok: true, firstUse: false, fingerprint: presented }
        : { ok: false, expected: known.fingerprint, presented }
    }
    this.hosts[name] = {
      type: keyType(blob),
      key: blob.toString('base64'),
      fingerprint: presented,
      added_at: this.now(),
    }
    this.save()
    return { ok: true, firstUse: true, fingerprint: presented }
  }

  get(host: string, port: number): HostKeyEntry | null {
    return this.hosts[HostKeyStore.entryName(host, port)] ?? null
  }

  list(): { name: string; entry: HostKeyEntry }[] {
    return Object.entries(this.hosts).map(([name, entry]) => ({ name, entry }))
  }

  /** Forgets a host's key so the next connection trusts whatever it presents. */
  forget(host: string, port: number): boolean {
    const name = HostKeyStore.entryName(host, port)
    if (!(name in this.hosts)) return false
    delete this.hosts[name]
    this.save()
    return true
  }

  private save(): void {
    atomicWriteFile(this.file, JSON.stringify({ version: 1, hosts: this.hosts }, null, 2) + '\n', { mode: 0o600 })
  }
}

/** The algorithm name at the start of an SSH public key blob. */
function keyType(blob: Buffer): string {
  if (blob.length < 4) return 'unknown'
  const len = blob.readUInt32BE(0)
  return blob.subarray(4, 4 + len).toString('latin1')
}
