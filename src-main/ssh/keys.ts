import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import ssh2 from 'ssh2'
import { atomicWriteFile, moveAsideCorrupt, replacedStateFileMessage } from '../lib/files'
import { fingerprintOfLine } from './fingerprint'

export { fingerprintOfBlob, fingerprintOfLine } from './fingerprint'

/** The service's own SSH identity, generated once into `DATA_DIR/ssh/` (DESIGN.md, SSH). */
export interface ServiceKey {
  /** OpenSSH private key (PEM); never leaves the process. */
  readonly privateKey: string
  /** One `authorized_keys` line: `ssh-ed25519 AAAA… tandem@host`. */
  readonly publicKey: string
  readonly privateKeyFile: string
  readonly publicKeyFile: string
  /** `SHA256:…` as `ssh-keygen -l` prints it. */
  readonly fingerprint: string
}

export const PRIVATE_KEY_NAME = 'id_ed25519'

export function ensureServiceKey(
  sshDir: string,
  opts: { comment?: string; warn?: (msg: string) => void } = {},
): ServiceKey {
  const privateKeyFile = path.join(sshDir, PRIVATE_KEY_NAME)
  const publicKeyFile = `${privateKeyFile}.pub`
  fs.mkdirSync(sshDir, { recursive: true, mode: 0o700 })
  const comment = opts.comment ?? `tandem@${os.hostname()}`

  let privateKey: string | null = null
  try {
    privateKey = fs.readFileSync(privateKeyFile, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  let publicKey: string | null = null
  if (privateKey !== null) {
    publicKey = publicLineOf(privateKey, comment)
    if (publicKey === null) {
      // Unusable key: keep it for the operator and start over (nodes must be re-authorised).
      const keptAs = moveAsideCorrupt(privateKeyFile)
      if (keptAs === null) throw new Error(`SSH key ${privateKeyFile} is unusable and could not be moved aside`)
      opts.warn?.(
        replacedStateFileMessage(
          'SSH key',
          privateKeyFile,
          { error: 'not a usable private key', keptAs },
          'a new key pair was generated (authorise it on the nodes again)',
        ),
      )
      privateKey = null
    } else {
      fs.chmodSync(privateKeyFile, 0o600)
    }
  }
  if (privateKey === null) {
    privateKey = generateEd25519PrivateKey(comment)
    atomicWriteFile(privateKeyFile, privateKey, { mode: 0o600 })
    publicKey = publicLineOf(privateKey, comment)
  }
  const line = publicKey as string
  if (readOrNull(publicKeyFile)?.trim() !== line) atomicWriteFile(publicKeyFile, line + '\n', { mode: 0o644 })
  return { privateKey, publicKey: line, privateKeyFile, publicKeyFile, fingerprint: fingerprintOfLine(line) }
}

/**
 * A new ed25519 private key in OpenSSH format. ssh2's generator drops a leading zero byte of the
 * public key about once in 200 keys, writing a key nothing can parse; such a pair is discarded
 * and another drawn.
 */
export function generateEd25519PrivateKey(comment = ''): string {
  for (let attempt = 0; attempt < 64; attempt++) {
    const { private: privateKey } = ssh2.utils.generateKeyPairSync('ed25519', { comment })
    if (publicLineOf(privateKey, comment) !== null) return privateKey
  }
  throw new Error('could not generate a well-formed ed25519 key pair')
}

function publicLineOf(privateKey: string, comment: string): string | null {
  const parsed = ssh2.utils.parseKey(privateKey)
  if (parsed instanceof Error) return null
  const key = Array.isArray(parsed) ? parsed[0] : parsed
  if (!key || key.isPrivateKey() !== true) return null
  return `${key.type} ${key.getPublicSSH().toString('base64')} ${comment}`
}

function readOrNull(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8')
  } catch {
    return null
  }
}
