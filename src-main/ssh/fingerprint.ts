import { createHash } from 'node:crypto'

/** OpenSSH-style fingerprint of a public key blob: `SHA256:<base64 without padding>`. */
export function fingerprintOfBlob(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`
}

/** The fingerprint of an `authorized_keys` line (`ssh-ed25519 AAAA… comment`). */
export function fingerprintOfLine(line: string): string {
  const b64 = line.trim().split(/\s+/)[1] ?? ''
  return fingerprintOfBlob(Buffer.from(b64, 'base64'))
}
