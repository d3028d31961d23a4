import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { HostKeyStore } from '../../../src-main/ssh/hostKeys'
import { fingerprintOfBlob } from '../../../src-main/ssh/keys'
import { SshError, SshPool } from '../../../src-main/ssh/pool'
import { startSimKit, type SimKit } from '../../sim/testkit'
import { keptAsideCopy } from '../../helpers/keptAside'

const blobA = Buffer.from('\0\0\0\x0bssh-ed25519\0\0\0\x20' + 'a'.repeat(32), 'latin1')
const blobB = Buffer.from('\0\0\0\x0bssh-ed25519\0\0\0\x20' + 'b'.repeat(32), 'latin1')

describe('HostKeyStore with an unreadable known_hosts.json', () => {
  let dir: string
  let file: string
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-kh-'))
    file = path.join(dir, 'known_hosts.json')
  })
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

  it('keeps the file aside and trusts no host until the operator confirms the presented key', () => {
    fs.writeFileSync(file, '{"version": 1, "hosts": {"[10.0.0.1]:22": {"ty')
    const warnings: string[] = []
    const store = new HostKeyStore(
      file,
      () => 1000,
      (m) => warnings.push(m),
    )
    expect(fs.readFileSync(keptAsideCopy(file)!, 'utf8')).toContain('10.0.0.1')
    expect(warnings.join('\n')).toMatch(/no SSH host key is trusted until/i)

    const first = store.check('10.0.0.1', 22, blobA)
    expect(first).toEqual({ ok: false, reason: 'unconfirmed', presented: fingerprintOfBlob(blobA) })
    expect(store.get('10.0.0.1', 22)).toBeNull()
    // Still refused on the next attempt: nothing was trusted silently.
    expect(store.check('10.0.0.1', 22, blobA).ok).toBe(false)
    expect(store.pending()).toEqual([
      {
        host: '10.0.0.1',
        port: 22,
        type: 'ssh-ed25519',
        fingerprint: fingerprintOfBlob(blobA),
        expected_fingerprint: null,
        seen_at: 1000,
      },
    ])
    expect(store.confirmation()).toEqual({ required: true, kept_as: keptAsideCopy(file) })

    // A fingerprint that is not the one presented is refused.
    expect(store.trust('10.0.0.1', 22, fingerprintOfBlob(blobB))).toMatchObject({ ok: false })
    expect(store.trust('10.0.0.9', 22, fingerprintOfBlob(blobA))).toMatchObject({ ok: false })
    expect(store.check('10.0.0.1', 22, blobA).ok).toBe(false)

    expect(store.trust('10.0.0.1', 22, fingerprintOfBlob(blobA))).toMatchObject({ ok: true })
    expect(store.check('10.0.0.1', 22, blobA)).toMatchObject({ ok: true, firstUse: false })
    expect(store.pending()).toEqual([])
  })

  it('stays in confirmation mode after a restart, so another host is not trusted silently either', () => {
    fs.writeFileSync(file, 'garbage')
    const store = new HostKeyStore(file, () => 1000)
    store.check('10.0.0.1', 22, blobA)
    store.trust('10.0.0.1', 22, fingerprintOfBlob(blobA))
    const again = new HostKeyStore(file, () => 2000)
    expect(again.check('10.0.0.1', 22, blobA)).toMatchObject({ ok: true })
    expect(again.check('10.0.0.2', 22, blobB)).toMatchObject({ ok: false, reason: 'unconfirmed' })
  })

  it('a file that cannot be read at all (a folder in its place) is kept aside too', () => {
    fs.mkdirSync(file)
    const store = new HostKeyStore(file, () => 1)
    expect(fs.statSync(keptAsideCopy(file)!).isDirectory()).toBe(true)
    expect(store.check('h', 22, blobA)).toMatchObject({ ok: false, reason: 'unconfirmed' })
  })

  it('a missing file still means trust on first use', () => {
    const store = new HostKeyStore(file, () => 1)
    expect(store.check('h', 22, blobA)).toMatchObject({ ok: true, firstUse: true })
    expect(store.confirmation()).toEqual({ required: false, kept_as: null })
  })

  it('a changed key can be trusted by its presented fingerprint (and only that one)', () => {
    const store = new HostKeyStore(file, () => 1)
    store.check('h', 22, blobA)
    expect(store.check('h', 22, blobB)).toEqual({
      ok: false,
      reason: 'changed',
      expected: fingerprintOfBlob(blobA),
      presented: fingerprintOfBlob(blobB),
    })
    expect(store.pending()[0]).toMatchObject({ expected_fingerprint: fingerprintOfBlob(blobA) })
    expect(store.trust('h', 22, fingerprintOfBlob(blobA))).toMatchObject({ ok: false })
    expect(store.trust('h', 22, fingerprintOfBlob(blobB))).toMatchObject({ ok: true })
    expect(store.check('h', 22, blobB)).toMatchObject({ ok: true })
  })
})

describe('SshPool against a store that needs confirmation', () => {
  let kit: SimKit
  const clock = new ManualClock()
  beforeAll(async () => {
    kit = await startSimKit({ clock })
  })
  afterAll(async () => kit.close())

  it('refuses every connect with host_key_unconfirmed carrying the presented fingerprint, then connects once trusted', async () => {
    const file = path.join(kit.dir, 'kh-corrupt.json')
    fs.writeFileSync(file, '{not json')
    const hostKeys = new HostKeyStore(file, () => clock.now())
    const pool = new SshPool({ privateKey: kit.key.privateKey, hostKeys, clock, logger: kit.logger })
    const t = kit.target(kit.sim.node1)
    try {
      const err = (await pool.exec(t, 'true').catch((e: unknown) => e)) as SshError
      expect(err).toBeInstanceOf(SshError)
      expect(err.kind).toBe('host_key_unconfirmed')
      const [pending] = hostKeys.pending()
      expect(pending?.fingerprint).toMatch(/^SHA256:/)
      expect(err.presentedFingerprint).toBe(pending?.fingerprint)
      expect(err.message).toContain(pending!.fingerprint)
      expect(err.message).toMatch(/Cluster view/)
      pool.clearUnreachable(t)
      expect(((await pool.exec(t, 'true').catch((e: unknown) => e)) as SshError).kind).toBe('host_key_unconfirmed')

      expect(hostKeys.trust('127.0.0.1', kit.sim.node1.port, pending!.fingerprint)).toMatchObject({ ok: true })
      pool.clearUnreachable(t)
      expect((await pool.exec(t, 'echo trusted')).stdout).toBe('trusted\n')
    } finally {
      await pool.close()
    }
  })
})
