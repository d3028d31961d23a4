import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

const root = path.resolve(__dirname, '../../..')
const text = fs.readFileSync(path.join(root, 'resources/tandem.service'), 'utf8')

/** `[Section]` → directive → every value it is given (systemd allows repeats). */
function parseUnit(unit: string): Record<string, Record<string, string[]>> {
  const out: Record<string, Record<string, string[]>> = {}
  let section = ''
  for (const raw of unit.split('\n')) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue
    const head = /^\[(\w+)\]$/.exec(line)
    if (head) {
      section = head[1] as string
      out[section] ??= {}
      continue
    }
    const eq = line.indexOf('=')
    const key = line.slice(0, eq)
    ;((out[section] as Record<string, string[]>)[key] ??= []).push(line.slice(eq + 1))
  }
  return out
}

const unit = parseUnit(text)
const service = unit.Service as Record<string, string[]>
const one = (key: string): string | undefined => service[key]?.at(-1)

describe('resources/tandem.service', () => {
  it('runs the headless daemon as a dedicated user with its state directory as DATA_DIR', () => {
    expect(one('User')).toBe('tandem')
    expect(one('DynamicUser')).toBeUndefined()
    expect(one('StateDirectory')).toBe('tandem')
    expect(service.Environment).toContain('DATA_DIR=/var/lib/tandem')
    expect(one('ExecStart')).toMatch(/^\/usr\/bin\/node \/opt\/tandem\/out\/main\/index\.js --headless$/)
    expect(one('Restart')).toBe('on-failure')
    expect(one('KillSignal')).toBe('SIGTERM')
    expect(unit.Install?.WantedBy).toEqual(['multi-user.target'])
    expect(unit.Unit?.After).toEqual(['network-online.target'])
  })

  it('is hardened without breaking SSH, Wake-on-LAN, the port or the data dir', () => {
    expect(one('NoNewPrivileges')).toBe('yes')
    expect(one('ProtectSystem')).toBe('strict')
    expect(one('PrivateTmp')).toBe('yes')
    const families = (one('RestrictAddressFamilies') ?? '').split(/\s+/)
    for (const f of ['AF_INET', 'AF_INET6', 'AF_UNIX']) expect(families).toContain(f)
    // Each of these would cut the daemon off from its nodes, or crash Node's JIT.
    expect(one('PrivateNetwork')).not.toBe('yes')
    expect(one('IPAddressDeny')).toBeUndefined()
    expect(one('MemoryDenyWriteExecute')).not.toBe('yes')
    // ProtectSystem=strict leaves only the state directory writable: nothing else is needed.
    expect(one('ReadOnlyPaths')).toBeUndefined()
    expect(one('CapabilityBoundingSet')).toBe('')
  })

  const hasSystemd = spawnSync('systemd-analyze', ['--version'], { stdio: 'ignore' }).status === 0
  it.skipIf(!hasSystemd)('passes systemd-analyze verify (where systemd is installed)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-unit-'))
    try {
      const file = path.join(dir, 'tandem.service')
      // The node this test runs under stands in for /usr/bin/node, which may live elsewhere here.
      fs.writeFileSync(file, text.replace('/usr/bin/node', process.execPath))
      const res = spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8' })
      expect(`${res.stdout}${res.stderr}`.trim()).toBe('')
      expect(res.status).toBe(0)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
