import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { systemClock } from '../../../src-main/lib/clock'
import { createLogger } from '../../../src-main/lib/logger'
import { ConnectivityStore } from '../../../src-main/nodes/connectivity'
import { HardwareService } from '../../../src-main/nodes/hardware'
import { inspectContainer } from '../../../src-main/services/containers'
import { HostKeyStore } from '../../../src-main/ssh/hostKeys'
import { ensureServiceKey, generateEd25519PrivateKey } from '../../../src-main/ssh/keys'
import { SshPool, type SshTarget } from '../../../src-main/ssh/pool'
import { shq } from '../../../src-main/ssh/quote'
import { nastyStrings } from '../../sim/testkit'
import { freePort } from '../../helpers/builtDaemon'

/**
 * The same probes against Debian's OpenSSH server on a loopback port (its own host key and an
 * authorized_keys holding Tandem's key), so the commands are proven on a real sshd and a real
 * shell, not only on the sim.
 */
const SSHD = '/usr/sbin/sshd'
const haveSshd = fs.existsSync(SSHD)

async function waitForPort(port: number, proc: ChildProcess, log: () => string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (proc.exitCode !== null) throw new Error(`sshd exited (${proc.exitCode}): ${log()}`)
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.destroy()
        resolve(true)
      })
      s.on('error', () => resolve(false))
    })
    if (ok) return
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`sshd did not listen on ${port}: ${log()}`)
}

describe.skipIf(!haveSshd)('against a real OpenSSH sshd', () => {
  let dir: string
  let sshd: ChildProcess
  let pool: SshPool
  let target: SshTarget
  let stderr = ''

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-sshd-'))
    const key = ensureServiceKey(path.join(dir, 'tandem-ssh'))
    const hostKey = path.join(dir, 'ssh_host_ed25519_key')
    fs.writeFileSync(hostKey, generateEd25519PrivateKey(), { mode: 0o600 })
    fs.writeFileSync(path.join(dir, 'authorized_keys'), key.publicKey + '\n', { mode: 0o600 })
    const port = await freePort()
    const user = os.userInfo().username
    fs.writeFileSync(
      path.join(dir, 'sshd_config'),
      [
        `Port ${port}`,
        'ListenAddress 127.0.0.1',
        `HostKey ${hostKey}`,
        `PidFile ${path.join(dir, 'sshd.pid')}`,
        `AuthorizedKeysFile ${path.join(dir, 'authorized_keys')}`,
        'StrictModes no',
        'UsePAM no',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'PubkeyAuthentication yes',
        'PermitRootLogin prohibit-password',
        `AllowUsers ${user}`,
        'LogLevel ERROR',
        '',
      ].join('\n'),
    )
    // Privilege separation directory; Debian creates it at service start, not at install.
    if (process.getuid?.() === 0) fs.mkdirSync('/run/sshd', { recursive: true, mode: 0o755 })
    sshd = spawn(SSHD, ['-D', '-e', '-f', path.join(dir, 'sshd_config')], { stdio: ['ignore', 'ignore', 'pipe'] })
    sshd.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
    await waitForPort(port, sshd, () => stderr)
    target = { host: '127.0.0.1', user, port }
    pool = new SshPool({
      privateKey: key.privateKey,
      hostKeys: new HostKeyStore(path.join(dir, 'known_hosts.json'), Date.now),
      clock: systemClock,
      logger: createLogger({ sink: { write: () => undefined } }),
    })
  })

  afterAll(async () => {
    await pool?.close()
    sshd?.kill('SIGTERM')
    if (dir) fs.rmSync(dir, { recursive: true, force: true })
  })

  it('the hardware probe reads what this Debian box really has', async () => {
    const store = new ConnectivityStore(
      path.join(dir, 'connectivity.json'),
      systemClock,
      createLogger({ sink: { write: () => undefined } }),
    )
    const hw = new HardwareService({
      pool,
      connectivity: store,
      clock: systemClock,
      logger: createLogger({ sink: { write: () => undefined } }),
      targets: { node1: target, node2: null },
    })
    const h = await hw.probe('node1')
    if (h.status !== 'ok') throw new Error(`probe failed: ${JSON.stringify(h)} ${stderr}`)
    expect(h.hostname).toBe(execFileSync('hostname', { encoding: 'utf8' }).trim())
    expect(h.cores).toBe(Number(execFileSync('nproc', { encoding: 'utf8' }).trim()))
    expect(h.ram?.total_bytes).toBe(os.totalmem())
    expect(h.disk?.total_bytes).toBeGreaterThan(0)
    // `uptime` prints minutes at best: the node's answer is this machine's uptime to within two of them.
    expect(Math.abs(h.uptime_s! - os.uptime())).toBeLessThan(120)
    expect(h.load).toHaveLength(3)
    const hasGpu = fs.existsSync('/usr/bin/nvidia-smi')
    if (!hasGpu) expect(h.gpu).toBeNull()
    // The MAC of the default-route interface, as the kernel reports it.
    const route = execFileSync('ip', ['route', 'show', 'default'], { encoding: 'utf8' })
    const dev = /\bdev\s+(\S+)/.exec(route)?.[1]
    if (dev) {
      expect(h.interface).toBe(dev)
      expect(h.mac).toBe(fs.readFileSync(`/sys/class/net/${dev}/address`, 'utf8').trim())
      expect(store.mac('node1')).toBe(h.mac)
    }
  })

  it('the container probe reports docker state, or why it cannot', async () => {
    const info = await inspectContainer(pool, target, 'vllm_node')
    const hasDocker = fs.existsSync('/usr/bin/docker')
    if (!hasDocker) {
      expect(info.state).toBe('unknown')
      expect(info.error).toMatch(/docker/)
    } else expect(['missing', 'running', 'exited', 'created', 'unknown']).toContain(info.state)
  })

  it('shq survives a real login shell byte for byte', async () => {
    // All through one shell, each string its own argument and printed with a NUL after it (none
    // holds one): sshd starts the account's shell for every command, and where that shell's startup
    // files are heavy (pyenv's init costs half a second of CPU on these machines) sixty commands on
    // two cores took longer than the test's time limit.
    const cases = nastyStrings(60, 7)
    expect(cases.filter((s) => s.includes('\0'))).toEqual([])
    const { stdout } = await pool.exec(target, `printf '%s\\0' ${cases.map((s) => shq(s)).join(' ')}`)
    expect(stdout.split('\0')).toEqual([...cases, ''])
  })
})

if (!haveSshd) {
  describe('real OpenSSH', () => {
    it.skip('skipped: /usr/sbin/sshd is not installed (apt-get install openssh-server)', () => undefined)
  })
}
