/**
 * The LIC1 license-key format, wire-compatible with the Keysat client SDKs (DESIGN.md,
 * "Licensing decisions"). A key is `LIC1-<payload>-<signature>`, both halves RFC 4648 base32,
 * upper case, no padding; the signature is Ed25519 (64 bytes) over the raw payload bytes.
 *
 * Payload v1, 74 bytes: version=1 (u8) · flags (u8) · product uuid (16) · license uuid (16) ·
 *   issued_at (i64 BE, unix s) · fingerprint hash (32; SHA-256 of the raw fingerprint or zeros).
 * Payload v2, 83 bytes + entitlements: version=2 · flags · product uuid · license uuid ·
 *   issued_at (i64 BE) · expires_at (i64 BE, 0 = perpetual) · fingerprint hash (32) ·
 *   entitlement count (u8) · per entitlement: length (u8) + UTF-8 bytes. No trailing bytes.
 * Flags: bit 0 fingerprint-bound, bit 1 trial. v1 keys read as expires_at 0, no entitlements.
 *
 * Interface: encodeBase32 / decodeBase32, encodePayload(p) → bytes, decodePayload(bytes) → p,
 * splitKey(text) → {payloadBytes, signature}, hashFingerprint(raw) → 32 bytes. Every parse
 * failure throws KeyFormatError (→ `bad_format`).
 */
import { createHash } from 'node:crypto'

export const KEY_PREFIX = 'LIC1'
export const FLAG_FINGERPRINT_BOUND = 0b01
export const FLAG_TRIAL = 0b10
export const V1_LENGTH = 74
export const V2_HEAD_LENGTH = 83
export const SIGNATURE_LENGTH = 64
/** The payload version every key is signed in now (v1 keys are still read). */
export const CURRENT_KEY_VERSION = 2
/** Longest key text accepted before decoding (255 entitlements of 255 bytes is ~105 KB; no sane key is near). */
export const MAX_KEY_LENGTH = 16_384

export interface LicensePayload {
  version: 1 | 2
  flags: number
  productId: string
  licenseId: string
  /** Unix seconds. */
  issuedAt: number
  /** Unix seconds; 0 = perpetual (always 0 for v1). */
  expiresAt: number
  fingerprintHash: Buffer
  entitlements: string[]
}

export class KeyFormatError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'KeyFormatError'
  }
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'
const LOOKUP = new Int8Array(128).fill(-1)
for (let i = 0; i < ALPHABET.length; i++) LOOKUP[ALPHABET.charCodeAt(i)] = i

export function encodeBase32(bytes: Uint8Array): string {
  let out = ''
  let buffer = 0
  let bits = 0
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte
    bits += 8
    while (bits >= 5) {
      out += ALPHABET[(buffer >>> (bits - 5)) & 31]
      bits -= 5
    }
    buffer &= (1 << bits) - 1
  }
  if (bits > 0) out += ALPHABET[(buffer << (5 - bits)) & 31]
  return out
}

export function decodeBase32(text: string): Buffer {
  const out = Buffer.alloc(Math.floor((text.length * 5) / 8))
  let buffer = 0
  let bits = 0
  let n = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    const v = code < 128 ? LOOKUP[code]! : -1
    if (v < 0) throw new KeyFormatError(`invalid base32 character at ${i}`)
    buffer = ((buffer << 5) | v) & 0xfff
    bits += 5
    if (bits >= 8) {
      out[n++] = (buffer >>> (bits - 8)) & 0xff
      bits -= 8
    }
  }
  // Canonical encoding only: leftover bits are padding and must be zero, at most 4 of them.
  if (bits >= 5 || (buffer & ((1 << bits) - 1)) !== 0) throw new KeyFormatError('non-canonical base32')
  return out
}

export function hashFingerprint(raw: string): Buffer {
  return createHash('sha256').update(raw, 'utf8').digest()
}

export function uuidToBytes(uuid: string): Buffer {
  const hex = uuid.replace(/-/g, '')
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) throw new KeyFormatError(`not a UUID: ${uuid}`)
  return Buffer.from(hex, 'hex')
}

export function bytesToUuid(b: Uint8Array): string {
  const h = Buffer.from(b).toString('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

function writeI64(buf: Buffer, offset: number, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new KeyFormatError(`timestamp out of range: ${value}`)
  buf.writeBigInt64BE(BigInt(value), offset)
}

function readI64(buf: Buffer, offset: number): number {
  const v = buf.readBigInt64BE(offset)
  if (v < 0n || v > BigInt(Number.MAX_SAFE_INTEGER)) throw new KeyFormatError('timestamp out of range')
  return Number(v)
}

export function encodePayload(p: LicensePayload): Buffer {
  if (p.fingerprintHash.length !== 32) throw new KeyFormatError('fingerprint hash must be 32 bytes')
  if (p.flags < 0 || p.flags > 255) throw new KeyFormatError('flags must fit one byte')
  const head = Buffer.alloc(p.version === 1 ? V1_LENGTH : V2_HEAD_LENGTH)
  head[0] = p.version
  head[1] = p.flags
  uuidToBytes(p.productId).copy(head, 2)
  uuidToBytes(p.licenseId).copy(head, 18)
  writeI64(head, 34, p.issuedAt)
  if (p.version === 1) {
    if (p.expiresAt !== 0 || p.entitlements.length > 0)
      throw new KeyFormatError('v1 keys carry no expiry or entitlements')
    p.fingerprintHash.copy(head, 42)
    return head
  }
  writeI64(head, 42, p.expiresAt)
  p.fingerprintHash.copy(head, 50)
  if (p.entitlements.length > 255) throw new KeyFormatError('at most 255 entitlements')
  head[82] = p.entitlements.length
  const parts: Buffer[] = [head]
  for (const e of p.entitlements) {
    const bytes = Buffer.from(e, 'utf8')
    if (bytes.length > 255) throw new KeyFormatError(`entitlement too long: ${e.slice(0, 20)}…`)
    parts.push(Buffer.from([bytes.length]), bytes)
  }
  return Buffer.concat(parts)
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

export function decodePayload(bytes: Buffer): LicensePayload {
  if (bytes.length < 1) throw new KeyFormatError('empty payload')
  const version = bytes[0]
  const flags = bytes[1] ?? 0
  if (version === 1) {
    if (bytes.length !== V1_LENGTH)
      throw new KeyFormatError(`v1 payload is ${bytes.length} bytes; expected ${V1_LENGTH}`)
    return {
      version: 1,
      flags,
      productId: bytesToUuid(bytes.subarray(2, 18)),
      licenseId: bytesToUuid(bytes.subarray(18, 34)),
      issuedAt: readI64(bytes, 34),
      expiresAt: 0,
      fingerprintHash: Buffer.from(bytes.subarray(42, 74)),
      entitlements: [],
    }
  }
  if (version !== 2) throw new KeyFormatError(`unsupported key version ${String(version)}`)
  if (bytes.length < V2_HEAD_LENGTH)
    throw new KeyFormatError(`v2 payload is ${bytes.length} bytes; expected ≥ ${V2_HEAD_LENGTH}`)
  const count = bytes[82]!
  const entitlements: string[] = []
  let at = V2_HEAD_LENGTH
  for (let i = 0; i < count; i++) {
    if (at >= bytes.length) throw new KeyFormatError('truncated entitlement list')
    const len = bytes[at]!
    at += 1
    if (at + len > bytes.length) throw new KeyFormatError('truncated entitlement')
    try {
      entitlements.push(utf8.decode(bytes.subarray(at, at + len)))
    } catch {
      throw new KeyFormatError('entitlement is not UTF-8')
    }
    at += len
  }
  if (at !== bytes.length) throw new KeyFormatError('trailing bytes in payload')
  return {
    version: 2,
    flags,
    productId: bytesToUuid(bytes.subarray(2, 18)),
    licenseId: bytesToUuid(bytes.subarray(18, 34)),
    issuedAt: readI64(bytes, 34),
    expiresAt: readI64(bytes, 42),
    fingerprintHash: Buffer.from(bytes.subarray(50, 82)),
    entitlements,
  }
}

/** Splits and base32-decodes a key; the payload is not yet interpreted or verified. */
export function splitKey(text: string): { payloadBytes: Buffer; signature: Buffer } {
  const key = text.trim()
  if (key.length > MAX_KEY_LENGTH) throw new KeyFormatError('key too long')
  const first = key.indexOf('-')
  const last = key.lastIndexOf('-')
  if (first < 0 || last === first) throw new KeyFormatError('expected LIC1-<payload>-<signature>')
  if (key.slice(0, first) !== KEY_PREFIX) throw new KeyFormatError('unknown key prefix')
  const payloadBytes = decodeBase32(key.slice(first + 1, last))
  const signature = decodeBase32(key.slice(last + 1))
  if (signature.length !== SIGNATURE_LENGTH)
    throw new KeyFormatError(`signature is ${signature.length} bytes; expected 64`)
  return { payloadBytes, signature }
}

export function joinKey(payloadBytes: Uint8Array, signature: Uint8Array): string {
  return `${KEY_PREFIX}-${encodeBase32(payloadBytes)}-${encodeBase32(signature)}`
}

export const isFingerprintBound = (p: LicensePayload): boolean => (p.flags & FLAG_FINGERPRINT_BOUND) !== 0
export const isTrial = (p: LicensePayload): boolean => (p.flags & FLAG_TRIAL) !== 0
