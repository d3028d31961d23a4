/**
 * The Ed25519 issuer key: generated once in `config.paths.licensingKeyDir` (private key PKCS#8 PEM,
 * mode 0600; public key SPKI PEM beside it), replaceable by an admin import.
 *
 * Interface:
 *   Issuer.loadOrCreate(dir, logger) → Issuer
 *   issuer.publicKeyPem                     SPKI PEM (what GET /v1/pubkey serves)
 *   issuer.sign(payload) → key text         `LIC1-…-…`
 *   issuer.verify(keyText) → VerifiedKey    {ok:true, payload} | {ok:false, reason:'bad_format'|'bad_signature'}
 *   issuer.importPrivateKeyPem(pem)         replaces the key (the old one is kept as a .bak file)
 *   verifyKey(keyText, publicKey)           the same check against any public key (vectors, clients)
 */
import fs from 'node:fs'
import path from 'node:path'
import crypto, { type KeyObject } from 'node:crypto'
import { atomicWriteFile, readStateFile, replacedStateFileMessage } from '../../lib/files'
import type { Logger } from '../../lib/logger'
import { KeyFormatError, decodePayload, encodePayload, joinKey, splitKey, type LicensePayload } from './keyFormat'

export type VerifiedKey =
  { ok: true; payload: LicensePayload } | { ok: false; reason: 'bad_format' | 'bad_signature'; message: string }

export const PRIVATE_KEY_FILE = 'issuer-ed25519.pem'
export const PUBLIC_KEY_FILE = 'issuer-ed25519.pub.pem'
/** Verified keys remembered (about 300 bytes each). */
const VERIFIED_CACHE_SIZE = 100_000

export function verifyKey(keyText: string, publicKey: KeyObject): VerifiedKey {
  let parts: { payloadBytes: Buffer; signature: Buffer }
  let payload: LicensePayload
  try {
    parts = splitKey(keyText)
    payload = decodePayload(parts.payloadBytes)
  } catch (err) {
    if (err instanceof KeyFormatError) return { ok: false, reason: 'bad_format', message: err.message }
    throw err
  }
  if (!crypto.verify(null, parts.payloadBytes, publicKey, parts.signature))
    return { ok: false, reason: 'bad_signature', message: 'signature did not verify' }
  return { ok: true, payload }
}

/** Parses a PEM private key and insists on Ed25519. */
export function parseEd25519PrivateKey(pem: string): KeyObject {
  let key: KeyObject
  try {
    key = crypto.createPrivateKey({ key: pem, format: 'pem' })
  } catch {
    throw new Error('not a PEM private key')
  }
  if (key.asymmetricKeyType !== 'ed25519')
    throw new Error(`expected an Ed25519 key, got ${key.asymmetricKeyType ?? 'unknown'}`)
  return key
}

export class Issuer {
  private privateKey: KeyObject
  private readonly verified = new Map<string, VerifiedKey & { ok: true }>()
  private publicKey: KeyObject
  private pem: string

  private constructor(
    private readonly dir: string,
    privateKey: KeyObject,
  ) {
    this.privateKey = privateKey
    this.publicKey = crypto.createPublicKey(privateKey)
    this.pem = this.publicKey.export({ format: 'pem', type: 'spki' }).toString()
  }

  static loadOrCreate(dir: string, logger: Logger): Issuer {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
    const file = path.join(dir, PRIVATE_KEY_FILE)
    const read = readStateFile(file, parseEd25519PrivateKey)
    if (read.kind === 'ok') {
      fs.chmodSync(file, 0o600)
      const issuer = new Issuer(dir, read.value)
      issuer.writePublic()
      return issuer
    }
    if (read.kind === 'corrupt')
      logger.error(
        replacedStateFileMessage(
          'licensing issuer key',
          file,
          read,
          'a new key is generated, and keys signed by the old one will not verify until it is imported again',
        ),
      )
    const { privateKey } = crypto.generateKeyPairSync('ed25519')
    const issuer = new Issuer(dir, privateKey)
    issuer.writePrivate()
    issuer.writePublic()
    logger.info('licensing issuer key generated', { dir })
    return issuer
  }

  get publicKeyPem(): string {
    return this.pem
  }

  get publicKeyObject(): KeyObject {
    return this.publicKey
  }

  sign(payload: LicensePayload): string {
    const bytes = encodePayload(payload)
    return joinKey(bytes, crypto.sign(null, bytes, this.privateKey))
  }

  /**
   * Verifies against the current issuer key. Keys that verified are remembered (bounded, least
   * recently used out): a key text always verifies the same way under the same public key, and apps
   * validate the same key again and again. Failures are never cached, so garbage cannot fill it.
   */
  verify(keyText: string): VerifiedKey {
    const hit = this.verified.get(keyText)
    if (hit) {
      this.verified.delete(keyText)
      this.verified.set(keyText, hit)
      return hit
    }
    const res = verifyKey(keyText, this.publicKey)
    if (res.ok) {
      this.verified.set(keyText, res)
      if (this.verified.size > VERIFIED_CACHE_SIZE) this.verified.delete(this.verified.keys().next().value as string)
    }
    return res
  }

  /** Replaces the issuer key with an imported one; the previous private key is kept as a dated .bak file. */
  importPrivateKeyPem(pem: string, now: number): void {
    const key = parseEd25519PrivateKey(pem)
    const file = path.join(this.dir, PRIVATE_KEY_FILE)
    if (fs.existsSync(file)) {
      fs.copyFileSync(file, `${file}.${now}.bak`)
      fs.chmodSync(`${file}.${now}.bak`, 0o600)
    }
    this.privateKey = key
    this.publicKey = crypto.createPublicKey(key)
    this.pem = this.publicKey.export({ format: 'pem', type: 'spki' }).toString()
    this.verified.clear()
    this.writePrivate()
    this.writePublic()
  }

  private writePrivate(): void {
    const pem = this.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
    atomicWriteFile(path.join(this.dir, PRIVATE_KEY_FILE), pem, { mode: 0o600 })
  }

  private writePublic(): void {
    atomicWriteFile(path.join(this.dir, PUBLIC_KEY_FILE), this.pem, { mode: 0o644 })
  }
}
