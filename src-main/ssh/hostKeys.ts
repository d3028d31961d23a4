import { z } from 'zod'
import { atomicWriteFile, readStateFile, replacedStateFileMessage } from '../lib/files'
import { fingerprintOfBlob } from './keys'

/**
 * Trust-on-first-use host keys, kept in `DATA_DIR/known_hosts.json`. The first key a host presents
 * is stored; a different key later is refused until the operator trusts the new one.
 *
 * When the file cannot be read it is kept aside and the store switches to confirmation mode for
 * good (`confirm_new` in the file, so a restart does not undo it): no key is trusted on first use
 * any more, because the keys Tandem trusted before are gone and a node answering with another key
 * could not be told apart from a new one. Every key a host presents but that is refused (changed or
 * unconfirmed) is remembered, and the operator trusts exactly that key by its fingerprint.
 */
const Entry = z.object({ type: z.string(), key: z.string(), fingerprint: z.string(), added_at: z.number() })
const FileShape = z.object({
  version: z.literal(1),
  hosts: z.record(z.string(), Entry),
  confirm_new: z.boolean().optional(),
})
export type HostKeyEntry = z.infer<typeof Entry>

export type HostKeyCheck =
  | { ok: true; firstUse: boolean; fingerprint: string }
  | { ok: false; reason: 'changed'; expected: string; presented: string }
  | { ok: false; reason: 'unconfirmed'; presented: string }

/** A key a host presented that was not trusted: what the operator can confirm. */
export interface PresentedKey {
  host: string
  port: number
  type: string
  fingerprint: string
  /** The key trusted before, when the host's key changed; null when none was known. */
  expected_fingerprint: string | null
  seen_at: number
}

export type TrustResult = { ok: true; entry: HostKeyEntry } | { ok: false; message: string }

export class HostKeyStore {
  private hosts: Record<string, HostKeyEntry>
  private confirmNew = false
  private keptAs: string | null = null
  /** Refused keys by entry name, with the blob so a trust stores exactly what was seen. */
  private readonly presented = new Map<string, PresentedKey & { key: string }>()

  constructor(
    private readonly file: string,
    private readonly now: () => number,
    warn: (msg: string) => void = () => {},
  ) {
    const res = readStateFile(file, (text) => FileShape.parse(JSON.parse(text)), now())
    this.hosts = {}
    if (res.kind === 'ok') {
      this.hosts = { ...res.value.hosts }
      this.confirmNew = res.value.confirm_new === true
    } else if (res.kind === 'corrupt') {
      this.confirmNew = true
      this.keptAs = res.keptAs
      warn(
        replacedStateFileMessage(
          'known hosts file',
          file,
          res,
          'no SSH host key is trusted until you confirm it in the Cluster view',
        ),
      )
      // Written at once so a restart stays in confirmation mode; a file that could not even be
      // moved aside is left alone until the operator trusts a key.
      if (res.keptAs !== null) this.save()
    }
  }

  static entryName(host: string, port: number): string {
    return `[${host}]:${port}`
  }

  /** Checks a presented key blob; stores it on first use unless confirmation is required. Synchronous: ssh2 calls it mid-handshake. */
  check(host: string, port: number, blob: Buffer): HostKeyCheck {
    const name = HostKeyStore.entryName(host, port)
    const presented = fingerprintOfBlob(blob)
    const known = Object.hasOwn(this.hosts, name) ? this.hosts[name] : undefined
    if (known && known.key === blob.toString('base64')) return { ok: true, firstUse: false, fingerprint: presented }
    if (known || this.confirmNew) {
      this.presented.set(name, {
        host,
        port,
        type: keyType(blob),
        key: blob.toString('base64'),
        fingerprint: presented,
        expected_fingerprint: known?.fingerprint ?? null,
        seen_at: this.now(),
      })
      return known
        ? { ok: false, reason: 'changed', expected: known.fingerprint, presented }
        : { ok: false, reason: 'unconfirmed', presented }
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

  /** Trusts the key a host last presented, only when `fingerprint` names exactly that key. */
  trust(host: string, port: number, fingerprint: string): TrustResult {
    const name = HostKeyStore.entryName(host, port)
    const seen = this.presented.get(name)
    if (!seen) return { ok: false, message: `${host}:${port} has presented no untrusted host key since Tandem started` }
    if (seen.fingerprint !== fingerprint)
      return {
        ok: false,
        message: `${host}:${port} presents ${seen.fingerprint}, not ${fingerprint}; nothing was trusted`,
      }
    const entry: HostKeyEntry = { type: seen.type, key: seen.key, fingerprint: seen.fingerprint, added_at: this.now() }
    this.hosts[name] = entry
    this.presented.delete(name)
    this.save()
    return { ok: true, entry }
  }

  /** Keys hosts presented that were refused, oldest first. */
  pending(): PresentedKey[] {
    return [...this.presented.values()].map(({ key: _key, ...p }) => p).sort((a, b) => a.seen_at - b.seen_at)
  }

  /** Whether new host keys need the operator's confirmation, and where the unreadable file went. */
  confirmation(): { required: boolean; kept_as: string | null } {
    return { required: this.confirmNew, kept_as: this.keptAs }
  }

  get(host: string, port: number): HostKeyEntry | null {
    const name = HostKeyStore.entryName(host, port)
    return Object.hasOwn(this.hosts, name) ? (this.hosts[name] ?? null) : null
  }

  list(): { name: string; entry: HostKeyEntry }[] {
    return Object.entries(this.hosts).map(([name, entry]) => ({ name, entry }))
  }

  /** Forgets a host's key so the next connection trusts whatever it presents (or, in confirmation mode, offers it for confirmation). */
  forget(host: string, port: number): boolean {
    const name = HostKeyStore.entryName(host, port)
    if (!Object.hasOwn(this.hosts, name)) return false
    delete this.hosts[name]
    this.save()
    return true
  }

  private save(): void {
    const body = { version: 1, hosts: this.hosts, ...(this.confirmNew ? { confirm_new: true } : {}) }
    atomicWriteFile(this.file, JSON.stringify(body, null, 2) + '\n', { mode: 0o600, role: 'trusted host keys' })
  }
}

/** The algorithm name at the start of an SSH public key blob. */
function keyType(blob: Buffer): string {
  if (blob.length < 4) return 'unknown'
  const len = blob.readUInt32BE(0)
  return blob.subarray(4, 4 + len).toString('latin1')
}
