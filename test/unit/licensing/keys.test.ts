import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import {
  decodeBase32,
  encodeBase32,
  hashFingerprint,
  isFingerprintBound,
  isTrial,
  FLAG_FINGERPRINT_BOUND,
  FLAG_TRIAL,
} from '../../../src-main/licensing/keys/keyFormat'
import { Issuer, PRIVATE_KEY_FILE, verifyKey } from '../../../src-main/licensing/keys/issuer'
import { keptAsideCopy } from '../../helpers/keptAside'

// The Keysat key vectors, kept in the repository so the test runs on any clone (fixtures/licensing/README.md).
const VECTORS = path.resolve(__dirname, '../../fixtures/licensing/keysat-key-vectors.json')
const vectors = JSON.parse(fs.readFileSync(VECTORS, 'utf8')) as {
  publicKeyPem: string
} & Record<string, { licenseKey: string; expected: Record<string, unknown> }>

const logger = createLogger({ sink: new MemorySink() })
const tmpDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'lic-keys-'))

/**
 * An independent decoder written from the format description (DESIGN.md and the client docs),
 * sharing no code with src-main: RFC 4648 base32 by bit string, then fixed offsets.
 */
function independentDecode(key: string) {
  const [prefix, p32, s32, ...rest] = key.split('-')
  if (prefix !== 'LIC1' || p32 === undefined || s32 === undefined || rest.length > 0) throw new Error('shape')
  const b32 = (s: string) => {
    const bits = [...s].map((c) => 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'.indexOf(c).toString(2).padStart(5, '0')).join('')
    const out: number[] = []
    for (let i = 0; i + 8 <= bits.length; i += 8) out.push(parseInt(bits.slice(i, i + 8), 2))
    return Buffer.from(out)
  }
  const p = b32(p32)
  const uuid = (b: Buffer) => b.toString('hex').replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5')
  const v = p[0]
  const ents: string[] = []
  if (v === 2) {
    let at = 83
    for (let i = 0; i < p[82]!; i++) {
      const n = p[at]!
      ents.push(p.subarray(at + 1, at + 1 + n).toString('utf8'))
      at += 1 + n
    }
    expect(at).toBe(p.length)
  } else expect(p.length).toBe(74)
  return {
    version: v,
    flags: p[1],
    productUuid: uuid(p.subarray(2, 18)),
    licenseUuid: uuid(p.subarray(18, 34)),
    issuedAt: Number(p.readBigInt64BE(34)),
    expiresAt: v === 2 ? Number(p.readBigInt64BE(42)) : 0,
    fingerprintHashHex: p.subarray(v === 2 ? 50 : 42, v === 2 ? 82 : 74).toString('hex'),
    entitlements: ents,
    payload: p,
    signature: b32(s32),
  }
}

describe('LIC1 format', () => {
  const pub = crypto.createPublicKey(vectors.publicKeyPem)
  for (const name of ['v1', 'v2', 'v2_perpetual_unbound']) {
    it(`verifies the ${name} fixture with the expected fields`, () => {
      const fx = vectors[name]!
      const res = verifyKey(fx.licenseKey, pub)
      if (!res.ok) throw new Error(res.message)
      const e = fx.expected
      const p = res.payload
      expect(p.version).toBe(e.version)
      expect(p.productId).toBe(e.productUuid)
      expect(p.licenseId).toBe(e.licenseUuid)
      expect(p.issuedAt).toBe(e.issuedAt)
      expect(p.expiresAt).toBe(e.expiresAt)
      expect(p.flags).toBe(e.flags)
      expect(isFingerprintBound(p)).toBe(e.isFingerprintBound)
      expect(isTrial(p)).toBe(e.isTrial)
      expect(p.entitlements).toEqual(e.entitlements)
      expect(p.fingerprintHash.toString('hex')).toBe(e.fingerprintHashHex)
      if (e.fingerprintRaw !== null)
        expect(hashFingerprint(e.fingerprintRaw as string).toString('hex')).toBe(e.fingerprintHashHex)
    })
  }

  it('rejects tampered and garbage keys with the right reason', () => {
    const pub = crypto.createPublicKey(vectors.publicKeyPem)
    const key = vectors.v2!.licenseKey
    const [pre, payload, sig] = key.split('-') as [string, string, string]
    // Flip one payload character to another valid base32 character: parses, signature fails.
    const i = 30
    const flipped = payload.slice(0, i) + (payload[i] === 'A' ? 'B' : 'A') + payload.slice(i + 1)
    expect(verifyKey(`${pre}-${flipped}-${sig}`, pub)).toMatchObject({ ok: false, reason: 'bad_signature' })
    expect(verifyKey('garbage', pub)).toMatchObject({ ok: false, reason: 'bad_format' })
    expect(verifyKey('LIC1-abc-def', pub)).toMatchObject({ ok: false, reason: 'bad_format' })
    expect(verifyKey(`LIC2-${payload}-${sig}`, pub)).toMatchObject({ ok: false, reason: 'bad_format' })
    expect(verifyKey(`LIC1-${payload}-${sig.slice(0, -4)}`, pub)).toMatchObject({ ok: false, reason: 'bad_format' })
    expect(verifyKey(`LIC1-${payload}AAAA-${sig}`, pub)).toMatchObject({ ok: false, reason: 'bad_format' })
    // Signed by another key.
    expect(verifyKey(key, crypto.generateKeyPairSync('ed25519').publicKey)).toMatchObject({
      ok: false,
      reason: 'bad_signature',
    })
  })

  it('base32 round-trips every length', () => {
    for (let n = 0; n < 40; n++) {
      const b = crypto.randomBytes(n)
      const s = encodeBase32(b)
      expect(s).toMatch(/^[A-Z2-7]*$/)
      expect(decodeBase32(s).equals(b)).toBe(true)
    }
  })
})

describe('issuer key', () => {
  it('is generated once with a 0600 private file, and issued v2 keys decode independently', () => {
    const dir = tmpDir()
    const issuer = Issuer.loadOrCreate(dir, logger)
    expect(fs.statSync(path.join(dir, PRIVATE_KEY_FILE)).mode & 0o777).toBe(0o600)
    const again = Issuer.loadOrCreate(dir, logger)
    expect(again.publicKeyPem).toBe(issuer.publicKeyPem)

    const payload = {
      version: 2 as const,
      flags: FLAG_FINGERPRINT_BOUND | FLAG_TRIAL,
      productId: crypto.randomUUID(),
      licenseId: crypto.randomUUID(),
      issuedAt: 1_767_225_600,
      expiresAt: 1_798_761_600,
      fingerprintHash: hashFingerprint('machine-1'),
      entitlements: ['pro', 'ünïcode', 'x'.repeat(255)],
    }
    const key = issuer.sign(payload)
    const d = independentDecode(key)
    expect(d).toMatchObject({
      version: 2,
      flags: 3,
      productUuid: payload.productId,
      licenseUuid: payload.licenseId,
      issuedAt: payload.issuedAt,
      expiresAt: payload.expiresAt,
      fingerprintHashHex: crypto.createHash('sha256').update('machine-1').digest('hex'),
      entitlements: payload.entitlements,
    })
    expect(d.signature.length).toBe(64)
    expect(crypto.verify(null, d.payload, crypto.createPublicKey(issuer.publicKeyPem), d.signature)).toBe(true)
    expect(issuer.verify(key)).toMatchObject({ ok: true })
  })

  it('imports an Ed25519 PEM, keeps the old key as a backup, and refuses other key types', () => {
    const dir = tmpDir()
    const issuer = Issuer.loadOrCreate(dir, logger)
    const fixtureLike = crypto.generateKeyPairSync('ed25519')
    issuer.importPrivateKeyPem(fixtureLike.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), 42)
    expect(issuer.publicKeyPem).toBe(fixtureLike.publicKey.export({ format: 'pem', type: 'spki' }).toString())
    expect(fs.existsSync(path.join(dir, `${PRIVATE_KEY_FILE}.42.bak`))).toBe(true)
    expect(Issuer.loadOrCreate(dir, logger).publicKeyPem).toBe(issuer.publicKeyPem)
    const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 1024 })
    expect(() =>
      issuer.importPrivateKeyPem(rsa.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), 43),
    ).toThrow(/Ed25519/)
    expect(() => issuer.importPrivateKeyPem('nope', 44)).toThrow(/PEM/)
  })

  it('a corrupt key file is moved aside and a new key generated', () => {
    const dir = tmpDir()
    fs.writeFileSync(path.join(dir, PRIVATE_KEY_FILE), 'not a key')
    const sink = new MemorySink()
    const issuer = Issuer.loadOrCreate(dir, createLogger({ sink }))
    expect(issuer.publicKeyPem).toMatch(/BEGIN PUBLIC KEY/)
    const keptAs = keptAsideCopy(path.join(dir, PRIVATE_KEY_FILE))
    expect(keptAs).not.toBeNull()
    expect(sink.lines.some((l) => l.includes('is malformed') && l.includes(`moved aside to ${keptAs}`))).toBe(true)
  })
})
