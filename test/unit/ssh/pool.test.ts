import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { HostKeyStore } from '../../../src-main/ssh/hostKeys'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { SshError, SshPool, UNREACHABLE_TTL_MS } from '../../../src-main/ssh/pool'
import { LineSplitter } from '../../../src-main/ssh/lines'
import { startSimKit, type SimKit } from '../../sim/testkit'

describe('SshPool against the sim', () => {
  let kit: SimKit
  const clock = new ManualClock()
  beforeAll(async () => {
    kit = await startSimKit({ clock })
  })
  afterAll(async () => kit.close())

  it('runs commands as channels on one connection and returns exit codes', async () => {
    const t = kit.target(kit.sim.node1)
    const r = await kit.pool.exec(t, 'echo out; echo err >&2; exit 7')
    expect(r).toMatchObject({ code: 7, stdout: 'out\n', stderr: 'err\n' })
    const many = await Promise.all(Array.from({ length: 20 }, (_, i) => kit.pool.exec(t, `echo ${i}`)))
    expect(many.map((m) => m.stdout.trim())).toEqual(Array.from({ length: 20 }, (_, i) => String(i)))
  })

  it('streams output line by line as it arrives', async () => {
    const lines: string[] = []
    const r = await kit.pool.exec(
      kit.target(kit.sim.node1),
      "printf 'a\\nb\\r c\\r\\n'; sleep 0.05; echo d; echo e >&2",
      {
        onLine: (l, s) => lines.push(`${s}:${l}`),
      },
    )
    expect(r.code).toBe(0)
    expect(lines.filter((l) => l.startsWith('stdout'))).toEqual(['stdout:a', 'stdout:b', 'stdout: c', 'stdout:d'])
    expect(lines).toContain('stderr:e')
  })

  it('cancels a long command and kills it remotely', async () => {
    const ac = new AbortController()
    const node = kit.sim.node1
    const marker = path.join(node.home, 'cancelled-marker')
    const p = kit.pool.exec(kit.target(node), `sleep 0.4; touch ${marker}`, { signal: ac.signal })
    setTimeout(() => ac.abort(), 100)
    await expect(p).rejects.toMatchObject({ kind: 'cancelled' })
    await new Promise((r) => setTimeout(r, 600))
    expect(fs.existsSync(marker)).toBe(false)
  })

  it('times out a command that overruns its deadline', async () => {
    const t = kit.target(kit.sim.node1)
    // Connected first, and a deadline a loaded machine opens a channel within: it then falls on the
    // command. A channel not open by the deadline is 'unreachable', cached for the tests after.
    expect((await kit.pool.exec(t, 'true')).code).toBe(0)
    await expect(kit.pool.exec(t, 'sleep 5', { timeoutMs: 1000 })).rejects.toMatchObject({ kind: 'timeout' })
  })

  it('reconnects transparently after the connection drops', async () => {
    const node = kit.sim.node2
    const t = kit.target(node)
    expect((await kit.pool.exec(t, 'echo one')).stdout).toBe('one\n')
    await node.down()
    await node.up()
    expect((await kit.pool.exec(t, 'echo two')).stdout).toBe('two\n')
  })

  it("caches 'unreachable' for 25 s per target", async () => {
    const node = kit.sim.node2
    const t = kit.target(node)
    await node.down()
    const first = await kit.pool.exec(t, 'true').catch((e: unknown) => e)
    expect(first).toBeInstanceOf(SshError)
    expect((first as SshError).kind).toBe('unreachable')
    expect((first as SshError).cached).toBe(false)
    await node.up()
    clock.advance(UNREACHABLE_TTL_MS - 1000)
    const second = await kit.pool.exec(t, 'true').catch((e: unknown) => e)
    expect((second as SshError).cached).toBe(true)
    // Another node is unaffected.
    expect((await kit.pool.exec(kit.target(kit.sim.node1), 'echo fine')).stdout).toBe('fine\n')
    clock.advance(2000)
    expect((await kit.pool.exec(t, 'echo back')).stdout).toBe('back\n')
  })

  it('a node that accepts TCP but never answers SSH is unreachable at the deadline', async () => {
    const node = kit.sim.node1
    const t = kit.target(node)
    await node.hang()
    const err = (await kit.pool.exec(t, 'true', { timeoutMs: 300 }).catch((e: unknown) => e)) as SshError
    expect(err.kind).toBe('unreachable')
    expect(err.message).toMatch(/no SSH answer within 0.3 s/)
    await node.up()
    kit.pool.clearUnreachable(t)
    expect((await kit.pool.exec(t, 'echo up')).stdout).toBe('up\n')
  })

  it("one caller's cancel does not fail another waiting on the same connection", async () => {
    const node = kit.sim.node1
    const t = kit.target(node)
    await node.hang()
    kit.pool.clearUnreachable(t)
    const ac = new AbortController()
    const cancelled = kit.pool.exec(t, 'true', { signal: ac.signal, timeoutMs: 400 }).catch((e: unknown) => e)
    const other = kit.pool.exec(t, 'true', { timeoutMs: 400 }).catch((e: unknown) => e)
    ac.abort()
    expect(((await cancelled) as SshError).kind).toBe('cancelled')
    expect(((await other) as SshError).kind).toBe('unreachable')
    await node.up()
    kit.pool.clearUnreachable(t)
  })

  it('a connection that goes silent is dropped and remembered as unreachable', async () => {
    const node = kit.sim.node2
    const t = kit.target(node)
    kit.pool.clearUnreachable(t)
    expect((await kit.pool.exec(t, 'echo live')).stdout).toBe('live\n')
    node.freeze()
    const err = (await kit.pool.exec(t, 'true', { timeoutMs: 300 }).catch((e: unknown) => e)) as SshError
    expect(err.kind).toBe('unreachable')
    expect(err.message).toMatch(/no answer on the SSH connection/)
    const again = (await kit.pool.exec(t, 'true').catch((e: unknown) => e)) as SshError
    expect(again.cached).toBe(true)
    node.clearFaults()
    kit.pool.clearUnreachable(t)
    expect((await kit.pool.exec(t, 'echo thawed')).stdout).toBe('thawed\n')
  })

  it('refuses a changed host key with a message saying how to reset', async () => {
    const node = kit.sim.node1
    const t = kit.target(node)
    await kit.pool.exec(t, 'true')
    await node.rotateHostKey()
    const err = (await kit.pool.exec(t, 'true').catch((e: unknown) => e)) as SshError
    expect(err).toBeInstanceOf(SshError)
    expect(err.kind).toBe('host_key_changed')
    expect(err.message).toMatch(/host key changed/)
    expect(err.message).toMatch(/known-hosts/)
    // Still refused while the key is unchanged (and the stored key was not overwritten).
    const stored = kit.hostKeys.get('127.0.0.1', node.port)
    expect(stored).not.toBeNull()
    // After forgetting, the new key is trusted.
    expect(kit.hostKeys.forget('127.0.0.1', node.port)).toBe(true)
    kit.pool.clearUnreachable(t)
    expect((await kit.pool.exec(t, 'echo trusted')).stdout).toBe('trusted\n')
    expect(kit.hostKeys.get('127.0.0.1', node.port)?.fingerprint).not.toBe(stored?.fingerprint)
  })

  it('reports a key the node does not accept as an auth problem', async () => {
    const other = ensureServiceKey(path.join(kit.dir, 'other-ssh'))
    const pool = new SshPool({
      privateKey: other.privateKey,
      hostKeys: new HostKeyStore(path.join(kit.dir, 'kh2.json'), () => 0),
      clock,
      logger: kit.logger,
    })
    const err = (await pool.exec(kit.target(kit.sim.node2), 'true').catch((e: unknown) => e)) as SshError
    expect(err.kind).toBe('auth')
    expect(err.message).toMatch(/authorized_keys/)
    await pool.close()
  })
})

describe('service key', () => {
  it('is generated once, private 0600, and reused', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-key-'))
    const a = ensureServiceKey(path.join(dir, 'ssh'))
    const b = ensureServiceKey(path.join(dir, 'ssh'))
    expect(a.publicKey).toBe(b.publicKey)
    expect(a.publicKey).toMatch(/^ssh-ed25519 AAAA/)
    expect(fs.statSync(a.privateKeyFile).mode & 0o777).toBe(0o600)
    expect(fs.readFileSync(a.publicKeyFile, 'utf8').trim()).toBe(a.publicKey)
    fs.rmSync(dir, { recursive: true })
  })
})

describe('LineSplitter', () => {
  it('handles \\r\\n split across chunks and lone \\r', () => {
    const lines: string[] = []
    const s = new LineSplitter((l) => lines.push(l))
    for (const c of ['a\r', '\nb', '\r 10%\r 20%', '\r\n', 'tail']) s.push(c)
    s.end()
    expect(lines).toEqual(['a', 'b', ' 10%', ' 20%', 'tail'])
  })
})
